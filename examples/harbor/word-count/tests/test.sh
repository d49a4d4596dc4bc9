#!/bin/sh
# The Harbor-style verifier of examples/harbor/word-count: Harbor's tests/test.sh, printing
# sevro.verifier assertions instead of writing a reward file.
#
# It runs in the trial's sandbox after the agent finished, with the workspace as its working
# directory. The inputs it tries count.sh on live beside it, in the evaluator directory
# "tests" ($SEVRO_EVALUATOR_TESTS) that the agent never sees, so an agent cannot fit count.sh
# to them. It prints one JSON list of assertions {"id", "passed", "detail"} and exits 0: a
# failed assertion fails the check; only a broken verifier exits non-zero.
set -u

inputs="$SEVRO_EVALUATOR_TESTS/inputs"
out=""

assert() { # id passed detail: one assertion (detail is text this script made, safe in JSON)
    out="$out${out:+,}{\"id\":\"$1\",\"passed\":$2,\"detail\":\"$3\"}"
}

counts() { # id input expected
    # The agent's output is untrusted: keep 16 safe characters of it for the detail.
    got=$(timeout 10 sh count.sh "$inputs/$2" 2>/dev/null | head -c 64 | tr -cd '0-9a-zA-Z \n')
    shown=$(printf '%s' "$got" | tr '\n' ' ' | head -c 16)
    if [ "$got" = "$3" ]; then
        assert "$1" true "$2: $3"
    else
        assert "$1" false "$2: expected $3, got '$shown'"
    fi
}

if [ -f count.sh ]; then
    assert script-present true "count.sh exists"
else
    assert script-present false "count.sh is missing"
fi
counts one-line one-line.txt 2
counts many-lines many-lines.txt 9
counts empty empty.txt 0
counts no-final-newline no-newline.txt 5
printf '[%s]\n' "$out"
