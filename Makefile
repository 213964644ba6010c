# The two commands (README): `make run` runs the main job, `make test` runs the tests.
# Each first runs the idempotent set-up and the build.
PY := .venv/bin/python
ENV := PYTHONPATH=build/python

.PHONY: build run test bench
build:
	scripts/build.sh

run: build
	$(ENV) $(PY) bench/bench.py --repeats 5

test: build
	./build/c_api_smoke
	$(ENV) $(PY) -m pytest -q tests

bench: build
	$(ENV) $(PY) bench/bench.py --repeats 15 --json build/bench.json
