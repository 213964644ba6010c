#!/bin/sh
# A tune.py --runner that measures on this machine, with this checkout's build: the arguments are
# tune/measure.py's (FUNCTION library:symbol ... --device D --repeats N --max-error E).
root=$(cd "$(dirname "$0")/../.." && pwd)
PYTHONPATH="$root/${POSATTN_BUILD:-build}/python" exec "$root/.venv/bin/python" "$root/tune/measure.py" "$@"
