"""bench/functions/embed_calls.py on a small encoder: one line, one time per call, the first the costliest
(it traces and compiles; the others reuse the compiled embedding)."""

import json

import pytest

from bench.functions import embed_calls


@pytest.mark.slow
def test_calls_line(capsys):
    embed_calls.main(["--model", "lenet5", "--size", "32", "--images", "4", "--calls", "3"])
    line = json.loads(capsys.readouterr().out)
    assert line["bench"] == "embed_calls" and line["model"] == "lenet5" and len(line["seconds"]) == 3
    first, *rest = line["seconds"]
    assert all(s > 0 for s in line["seconds"]) and first > max(rest)
