"""A bounded slice of the fuzzer (tests/fuzz.py) in the test command: batches of fresh seeds, each
in a child process, so that a crash or a hang is reported with the call that caused it."""
import posattn
from conftest import LIBRARY_DIR, SEED
from fuzz import run_in_child

BATCHES, CALLS = 6, 400


def test_the_module_under_test_is_the_builds():  # (the sanitized one in the sanitized leg)
    assert posattn.__file__.startswith(str(LIBRARY_DIR)), posattn.__file__


def test_fuzzed_calls_fail_cleanly_or_match_the_reference():
    totals, failures = {"ok": 0, "error": 0}, []
    for batch in range(BATCHES):
        counts, failed = run_in_child(SEED * BATCHES + batch, CALLS, timeout=120)
        for outcome, n in counts.items():
            totals[outcome] += n
        failures += failed
    assert not failures, "\n".join(failures)
    # Both kinds of call were made: the slice exercises errors and results alike.
    assert totals["ok"] > CALLS and totals["error"] > CALLS, totals
