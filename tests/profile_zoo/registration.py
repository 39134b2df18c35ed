"""When was each zoo entry's expectation registered: before or after the
recording that CI replays? From git history, so it cannot be wished.

    python3 tests/profile_zoo/registration.py           print each entry's evidence
    python3 tests/profile_zoo/registration.py --check   exit 1 if expected.json's `registered` disagrees
    python3 tests/profile_zoo/registration.py --write   set `registered` in expected.json

The rule: R is the last commit that changed the entry's recording
(tests/data/profile_zoo/<name>/profile.json). The entry was registered
`before_recording` when, in R's parent, expected.json already held it with
the same judged fields as now (expect_tools, expect_class, alt_classes,
may_also_fire, good, expect_advice); otherwise `after_recording` (it was
added or changed with or after the recording, knowing the result). This
covers the expectation only: a tool or the classifier changed after a
recording (tests/data/profile_zoo/README.md says where) is not caught by it.
Needs the repository's full history (not a shallow clone).
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXPECTED = os.path.join(HERE, "expected.json")
JUDGED = ("expect_tools", "expect_class", "alt_classes", "may_also_fire", "good", "expect_advice")


def git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout


def expected_at(commit):
    """Entries at `commit`: expected.json's, and pending.json's (registered
    before a recording moved them into expected.json)."""
    out = {}
    for f in ("pending.json", "expected.json"):
        text = git("show", f"{commit}:tests/profile_zoo/{f}")
        if text:
            out.update({e["name"]: e for e in json.loads(text)})
    return out


def registration(entry):
    """(registered, evidence) for one entry of expected.json at HEAD."""
    name = entry["name"]
    commits = git("log", "--format=%h", "--", f"tests/data/profile_zoo/{name}/profile.json").split()
    if not commits:
        return None, "no recording"
    rec = commits[0]
    before = expected_at(rec + "^").get(name)
    if before is None:
        return "after_recording", f"recorded in {rec}; the entry did not exist before it"
    changed = [f for f in JUDGED if before.get(f) != entry.get(f)]
    if changed:
        return "after_recording", f"recorded in {rec}; changed since its parent: {', '.join(changed)}"
    return "before_recording", f"recorded in {rec}; judged fields unchanged since its parent"


def main(argv):
    if git("rev-parse", "--is-shallow-repository").strip() == "true":
        print("registration.py needs the full git history (this clone is shallow)", file=sys.stderr)
        return 2
    entries = json.load(open(EXPECTED))
    bad = 0
    for e in entries:
        reg, why = registration(e)
        mark = ""
        if e.get("registered") != reg:
            bad += 1
            mark = f"  (expected.json says {e.get('registered')})"
        print(f"{e['name']:<22} {reg or '-':<17} {why}{mark}")
        if "--write" in argv and reg:
            e["registered"] = reg
    if "--write" in argv:
        with open(EXPECTED, "w") as f:
            f.write(json.dumps(entries, indent=2, ensure_ascii=False) + "\n")
        return 0
    return 1 if bad and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
