# The two commands (README): `make run` runs the main job, `make test` runs the tests.
# Each first runs the idempotent set-up and the build.
PY := .venv/bin/python
ENV := PYTHONPATH=build/python

.PHONY: build run test bench peers
build:
	scripts/build.sh

run: build
	$(ENV) $(PY) bench/bench.py --repeats 5

# The host (x86) leg, the sanitized leg (ASan + UBSan), the ARM leg (cross-built, run under
# qemu), then the coverage matrix.
test: build
	./build/c_api_smoke
	$(ENV) $(PY) -m pytest -q tests
	scripts/test_sanitized.sh
	scripts/build_arm.sh
	scripts/test_arm.sh
	$(PY) scripts/coverage.py

bench: build
	$(ENV) $(PY) bench/bench.py --repeats 15 --json build/bench.json

# posattn beside what its users run instead (torch, ONNX Runtime: about 5 GB into .venv-peers, never
# a dependency of posattn; ggml's CPU backend built from source into build-ggml): its torch interop
# tests, then bench/peers.py's table.
peers: build
	scripts/venv.sh .venv-peers scripts/requirements-peers.txt
	scripts/ggml.sh
	$(ENV) .venv-peers/bin/python -m pytest -q -p no:cacheprovider tests/test_torch.py
	$(ENV) .venv-peers/bin/python bench/peers.py
