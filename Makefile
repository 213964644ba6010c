# The two commands (README): `make run` runs the main job, `make test` runs the tests.
# Each first runs the idempotent set-up and the build.
PY := .venv/bin/python
ENV := PYTHONPATH=build/python

.PHONY: build run test bench peers
build:
	scripts/build.sh

run: build
	$(ENV) $(PY) bench/bench.py --repeats 5

# The host (x86) leg (the C smoke program, the C++ unit tests through ctest, the pytest harness),
# the sanitized leg (ASan + UBSan), the ARM leg (cross-built, run under qemu), then the coverage
# matrix.
test: build
	./build/c_api_smoke
	.venv/bin/ctest --test-dir build --output-on-failure
	$(ENV) $(PY) -m pytest -q tests
	scripts/test_sanitized.sh
	scripts/build_arm.sh
	scripts/test_arm.sh
	$(PY) scripts/coverage.py

# The benchmark with more repeats and the autoscheduled baselines (built here: POSATTN_BASELINES,
# switched off again after, so that `make test` does not build and test them).
bench: build
	.venv/bin/cmake -DPOSATTN_BASELINES=ON build && .venv/bin/cmake --build build && \
	$(ENV) $(PY) bench/bench.py --repeats 15 --autoschedulers --json build/bench.json && \
	$(PY) bench/to_markdown.py build/bench.json; \
	status=$$?; .venv/bin/cmake -DPOSATTN_BASELINES=OFF build > /dev/null; exit $$status

# posattn beside what its users run instead (torch, ONNX Runtime: about 5 GB into .venv-peers, never
# a dependency of posattn; ggml's CPU backend built from source into build-ggml): its torch interop
# tests, then bench/peers.py's table.
peers: build
	scripts/venv.sh .venv-peers scripts/requirements-peers.txt
	scripts/ggml.sh
	$(ENV) .venv-peers/bin/python -m pytest -q -p no:cacheprovider tests/test_torch.py
	$(ENV) .venv-peers/bin/python bench/peers.py
