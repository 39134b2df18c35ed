#!/usr/bin/env python3
"""bench/llm_demo.sh's helper (stdlib only).

  demo.py get MANIFEST KEY            print a manifest value (KEY: llm_timeout_s,
                                      RUN.tasks, RUN.kopt_args, RUN.timeout_s), one per line
  demo.py script MANIFEST RUN OUT     write RUN's replies as llm_script_server's script
  demo.py summary MANIFEST OUT_DIR    what the demo did, from the run store, the knowledge
                                      base (memory.json) and the server's request logs;
                                      a PASS/FAIL line per claim, exit 1 if any fails

A reply in the manifest answers one task's prompt (matched by its first line,
"# Task NAME" or "# Repair: task NAME"): a candidate file with its move, a
tool call, or a fault (status, garbage, truncated, delay_s).
"""
import json
import os
import re
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ADMIT_RATIO = 0.97  # src/memory/admission.h: kMaxAdmitTimeRatio


def load(path):
    with open(path) as f:
        return json.load(f)


def run_of(manifest, name):
    for r in manifest["runs"]:
        if r["name"] == name:
            return r
    sys.exit(f"demo.py: no run {name!r} in the manifest")


def cmd_get(manifest, key):
    if "." in key:
        run, field = key.split(".", 1)
        value = run_of(manifest, run)[field]
    else:
        value = manifest[key]
    for v in value if isinstance(value, list) else [value]:
        print(v)


def match_of(reply):
    if reply["ask"] == "repair":
        return f"# Repair: task {reply['task']}\n"
    return f"# Task {reply['task']}\n"


def cmd_script(manifest, run, out):
    script = []
    for r in run_of(manifest, run)["replies"]:
        e = {"match": match_of(r)}
        if "status" in r:
            e.update(kind="status", status=r["status"], message=r.get("message", "error"))
            if "retry_after" in r:
                e["retry_after"] = r["retry_after"]
        elif r.get("garbage"):
            e["kind"] = "garbage"
        elif "tool_calls" in r:
            e.update(kind="openai", text="", tool_calls=r["tool_calls"])
        else:
            path = os.path.join(HERE, r["code"])
            with open(path) as f:
                code = f.read()
            if "typo" in r:  # the same source with one mistake, for the repair loop
                good, bad = r["typo"]
                assert good in code, f"{path} has no {good!r} to misspell"
                code = code.replace(good, bad, 1)
            lang = "cuda" if path.endswith(".cu") else "python"
            e.update(kind="openai",
                     text=f"Move: {r['move']}\n\n{r['say']}\n\n```{lang}\n{code}```\n",
                     input_tokens=3000, output_tokens=len(code) // 4)
        for k in ("truncated", "cut", "delay_s"):
            if k in r:
                e[k] = r[k]
        what = r.get("fault") or r.get("move") or "a reply"
        e["label"] = r.get("label") or f"{r['task']} {'fault' if r.get('fault') else r['ask']}: {what}"
        script.append(e)
    with open(out, "w") as f:
        json.dump(script, f, indent=1)


# --- the summary ---

TASK_LINE = re.compile(r"^# (?:Task|Repair: task) (\S+)")


class Report:
    def __init__(self):
        self.lines = []
        self.checks = []

    def say(self, text=""):
        self.lines.append(text)
        print(text)

    def check(self, ok, claim, detail=""):
        state = {True: "PASS", False: "FAIL", None: "n/a "}[ok]
        self.checks.append(ok)
        self.say(f"  [{state}] {claim}" + (f": {detail}" if detail else ""))


def jload(text, default):
    try:
        return json.loads(text) if text else default
    except ValueError:
        return default


def store_run(db, run_id):
    """One run of the store as plain dicts: tasks, with their nodes."""
    tasks = []
    for idx, name, status, best, finalists, bundle in db.execute(
            "SELECT task_index, name, status, best_node, finalists, bundle FROM tasks "
            "WHERE run_id = ? ORDER BY task_index", (run_id,)):
        t = {"index": idx, "name": name, "status": status, "best": best,
             "finalists": jload(finalists, []), "bundle": jload(bundle, {}), "nodes": {}}
        for nid, parent, move, proposer, kind, cname, detail in db.execute(
                "SELECT node_id, parent_id, move, proposer, kind, name, detail FROM nodes "
                "WHERE run_id = ? AND task_index = ? ORDER BY node_id", (run_id, idx)):
            t["nodes"][nid] = {"id": nid, "parent": parent, "move": move, "proposer": proposer,
                               "kind": kind, "name": cname, "detail": jload(detail, {})}
        for nid, verdict, time_ms, speedup, outcome in db.execute(
                "SELECT node_id, verdict, time_ms, speedup, outcome FROM outcomes "
                "WHERE run_id = ? AND task_index = ?", (run_id, idx)):
            if nid in t["nodes"]:
                t["nodes"][nid].update(verdict=verdict, time_ms=time_ms, speedup=speedup,
                                       outcome=jload(outcome, {}))
        for nid, diagnoses in db.execute(
                "SELECT node_id, diagnoses FROM profiles WHERE run_id = ? AND task_index = ?",
                (run_id, idx)):
            if nid in t["nodes"]:
                t["nodes"][nid]["profile"] = [d.get("tool", "?") for d in jload(diagnoses, [])]
        tasks.append(t)
    return tasks


def eager_ms(task):
    e = task["bundle"].get("eager_ms")
    if isinstance(e, dict):
        return e.get("median")
    return e if isinstance(e, (int, float)) else None


def parent_ms(task, node):
    p = task["nodes"].get(node["parent"])
    if p and p.get("verdict") == "measured" and p.get("time_ms"):
        return p["time_ms"]
    if p is None or p["kind"] == "reference":
        return eager_ms(task)
    return None


def best_speedup(task):
    for f in task["finalists"]:
        if f.get("winner") and f.get("speedup_vs_eager"):
            return f["speedup_vs_eager"], f.get("node"), f.get("time_ms")
    n = task["nodes"].get(task["best"])
    if n and n.get("speedup"):
        return n["speedup"], n["id"], n.get("time_ms")
    return None, None, None


def requests_by_task(out, run):
    path = os.path.join(out, f"{run}.requests.json")
    if not os.path.exists(path):
        return None, {}
    log = load(path)
    by = {}
    for r in log["requests"]:
        m = TASK_LINE.match(r.get("last_user_message", ""))
        by.setdefault(m.group(1) if m else "?", []).append(r)
    return log, by


def describe_node(rep, task, n, e):
    d = n["detail"]
    pm = parent_ms(task, n)
    verdict = n.get("verdict", "not measured")
    line = f"    #{n['id']} from #{n['parent']}, {d.get('ask', '?')}"
    if d.get("ask") == "repair":
        line += f" (round {d.get('repair_round')}, of #{d.get('repair_of')})"
    line += f": {n['move']}\n      -> {verdict}"
    if n.get("time_ms"):
        line += f", {n['time_ms']:.4g} ms"
        if n.get("speedup"):
            line += f", {n['speedup']:.2f}x vs eager"
        if pm:
            line += f", {pm / n['time_ms']:.2f}x its parent"
    elif n.get("outcome"):
        o = n["outcome"]
        why = (o.get("reasons") or [""])[0] if o.get("reasons") else o.get("log", "")
        why = next((l for l in str(why).splitlines() if "error" in l.lower()), str(why)[:120])
        if why:
            line += f" ({why.strip()[:140]})"
    if e:
        line += f"; learned as {e['id']} (gain {e.get('gain', 0):.2f}x)"
    rep.say(line)
    p = d.get("prompt", {})
    if p:
        rep.say(f"      prompt {p.get('chars', 0):,} chars (+ system {p.get('system_chars', 0):,}), "
                f"hash {str(p.get('hash', ''))[:12]}; diagnoses in it: "
                f"{', '.join(d.get('diagnoses', [])) or 'none'}; memory ids in it: "
                f"{', '.join(d.get('memory', [])) or 'none'}"
                + (f"; tools called: {', '.join(c.get('name', '?') for c in d.get('tool_calls', []))}"
                   if d.get("tool_calls") else ""))
    if n.get("profile") is not None:
        rep.say(f"      profiled: {', '.join(n['profile']) or 'no findings'}")


def key_nowhere(out, key):
    hits, files = [], 0
    for base, _, names in os.walk(out):
        for name in names:
            path = os.path.join(base, name)
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:
                continue
            files += 1
            if key in data:
                hits.append(os.path.relpath(path, out))
    return files, hits


def cmd_summary(manifest_path, out):
    m = load(manifest_path)
    roles = m["roles"]
    device = "cpu" if "cpu" in run_of(m, "run1")["kopt_args"] else "cuda"
    rep = Report()
    rep.say(f"== LLM proposer and learned memory demo ({device}), {out}")
    if os.path.exists(os.path.join(out, "timing.txt")):
        with open(os.path.join(out, "timing.txt")) as f:
            for line in f.read().splitlines()[1:]:
                rep.say(f"  {line}")
    store = os.path.join(out, "runs.db")
    if not os.path.exists(store):
        rep.say("no run store: kopt did not get far enough (see OUT/run1.kopt.txt)")
        return 1
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    ids = {}
    for run in ("run1", "run2"):
        res = os.path.join(out, f"{run}.result.json")
        if os.path.exists(res):
            ids[run] = load(res).get("run")
    if len(ids) < 2:  # a run that did not finish wrote no result: take them in order
        order = [r for (r,) in db.execute("SELECT id FROM runs ORDER BY created_at")]
        for run, rid in zip(("run1", "run2"), order):
            ids.setdefault(run, rid)
    memory = load(os.path.join(out, "memory.json")) if os.path.exists(
        os.path.join(out, "memory.json")) else []
    learned = [e for e in memory if e.get("origin") == "learned"]
    learned_at = {}  # (run, task, node) -> the entry learned from that node
    for e in learned:
        pv = e.get("provenance", {})
        learned_at[(pv.get("run"), pv.get("task"), pv.get("node"))] = e
    runs = {run: store_run(db, rid) for run, rid in ids.items()}

    for run in ("run1", "run2"):
        rid = ids.get(run)
        status = db.execute("SELECT status, note FROM runs WHERE id = ?", (rid,)).fetchone()
        log, reqs = requests_by_task(out, run)
        rep.say()
        rep.say(f"== {run}: run {rid} ({status[0] if status else 'missing'}); "
                f"{len(log['requests']) if log else 0} request(s) reached the server"
                + (f", {len(log['unserved'])} scripted repl(ies) not served: {log['unserved']}"
                   if log and log["unserved"] else ""))
        for task in runs.get(run, []):
            s, node, ms = best_speedup(task)
            e = eager_ms(task)
            rep.say(f"  {task['name']} ({task['status']}): best "
                    + (f"{s:.2f}x vs eager (node {node}, {ms:.4g} ms; eager {e:.4g} ms)"
                       if s and ms and e else "none"))
            rs = reqs.get(task["name"], [])
            if rs:
                sizes = [r["body_bytes"] for r in rs]
                rep.say(f"    {len(rs)} request(s) to the model, bodies {min(sizes):,}..{max(sizes):,} bytes "
                        "(attempts of one request share its body):")
                t0, ask, last = rs[0]["at_s"], 0, None
                for r in rs:
                    same = last is not None and (r["last_user_message"], r["body_bytes"]) == last
                    ask += 0 if same else 1
                    last = (r["last_user_message"], r["body_bytes"])
                    tag = " (retry)" if same else " " * 8
                    rep.say(f"      +{r['at_s'] - t0:5.1f} s  request {ask}{tag}  {r['served']}")
            for n in task["nodes"].values():
                if n["proposer"] == "llm" and n["detail"].get("prompt"):
                    describe_node(rep, task, n, learned_at.get((rid, task["name"], n["id"])))
        for path in (f"{run}.kopt.txt",):
            p = os.path.join(out, path)
            if os.path.exists(p):
                with open(p) as f:
                    for line in f:
                        if line.startswith("memory ") or "did not answer" in line:
                            rep.say(f"  kopt: {line.rstrip()}")

    rep.say()
    rep.say("== what memory holds (kopt memory list --db OUT/memory.db)")
    for e in learned:
        pv = e.get("provenance", {})
        rep.say(f"  {e['id']}  gain {e.get('gain', 0):.2f}x  from {pv.get('task')} node {pv.get('node')}"
                f" of run {pv.get('run')}: {e.get('title')}")
    rep.say(f"  and {len(memory) - len(learned)} curated entries")

    rep.say()
    rep.say("== claims")
    tasks1 = {t["name"]: t for t in runs.get("run1", [])}
    tasks2 = {t["name"]: t for t in runs.get("run2", [])}
    llm_nodes = [n for t in list(tasks1.values()) + list(tasks2.values())
                 for n in t["nodes"].values() if n["proposer"] == "llm" and n["parent"] is not None]

    t = tasks1.get(roles["improved"])
    s = best_speedup(t)[0] if t else None
    rep.check(bool(s and s > 1.0), f"{roles['improved']} improved by a scripted reply",
              f"best {s:.2f}x vs eager" if s else "no measured candidate")

    t = tasks1.get(roles["repaired"])
    rep_nodes = [n for n in (t["nodes"].values() if t else []) if n["detail"].get("ask") == "repair"]
    ok, why = False, "no repair was asked for"
    expect = next((r.get("expect_in_prompt") for r in run_of(m, "run1")["replies"]
                   if r["task"] == roles["repaired"] and r["ask"] == "repair"), None)
    for n in rep_nodes:
        failed = t["nodes"].get(n["detail"].get("repair_of"), {})
        text = n["detail"].get("prompt", {}).get("text", "")
        has = bool(expect) and expect in text
        ok = n.get("verdict") == "measured" and failed.get("verdict") in (
            "build_failed", "incorrect", "crashed") and has
        why = (f"#{failed.get('id')} {failed.get('verdict')}, its error in the repair prompt: "
               f"{'yes' if has else 'NO'} ({expect!r}); repair #{n['id']} round "
               f"{n['detail'].get('repair_round')}: {n.get('verdict')}")
        if ok:
            break
    rep.check(ok, f"{roles['repaired']} recovered by the repair loop", why)

    log1, reqs1 = requests_by_task(out, "run1")
    faults = [r.get("label") or f"{r['task']} fault: {r['fault']}" for r in run_of(m, "run1")["replies"]
              if r["task"] == roles["faults"] and r.get("fault")]
    frs = reqs1.get(roles["faults"], [])
    served = [r["served"] for r in frs]
    missing = [f for f in faults if f not in served]
    # Each fault must be answered by kopt's client retrying the same request
    # (same prompt, same body), not by a new request: the fault was survived,
    # not taken for a reply.
    not_retried = [f for f in faults if f in served and (
        served.index(f) + 1 >= len(frs)
        or (frs[served.index(f) + 1]["last_user_message"], frs[served.index(f) + 1]["body_bytes"])
        != (frs[served.index(f)]["last_user_message"], frs[served.index(f)]["body_bytes"]))]
    t = tasks1.get(roles["faults"])
    measured = [n for n in (t["nodes"].values() if t else [])
                if n["proposer"] == "llm" and n["parent"] is not None and n.get("verdict") == "measured"]
    rep.check(not missing and not not_retried and bool(measured),
              f"{roles['faults']} survived every injected fault",
              f"{len(faults) - len(missing)} of {len(faults)} faults served, each followed by a retry of "
              f"the same request" + (f" (not: {missing})" if missing else "")
              + (f" (NOT retried after: {not_retried}; a timeout not retried means this kopt ignores "
                 f"KOPT_LLM_TIMEOUT_S: a binary older than llm_demo.sh?)" if not_retried else "")
              + f"; then {len(measured)} candidate(s) measured")

    with_prompt = [n for n in llm_nodes if n["detail"].get("prompt", {}).get("text")]
    sized = all(n["detail"]["prompt"].get("chars") == len(n["detail"]["prompt"]["text"].encode())
                for n in with_prompt)
    lengths = [len(n["detail"]["prompt"]["text"]) for n in with_prompt] or [0]
    rep.check(bool(with_prompt) and sized and len(with_prompt) == len(llm_nodes),
              "every LLM candidate's prompt is stored in the run (full text, size, sections)",
              f"{len(with_prompt)} prompts, {min(lengths):,}..{max(lengths):,} chars")

    diag = [n for n in llm_nodes if n["detail"].get("diagnoses")]
    if device == "cpu":
        rep.check(None, "a prompt carries the parent's diagnoses",
                  "no profiler on the CPU (Nsight Compute needs a GPU)")
    else:
        profiled = [(t["name"], n["id"], n["profile"]) for t in tasks1.values()
                    for n in t["nodes"].values() if n.get("profile") is not None]
        rep.check(bool(diag), "a prompt carries the parent's diagnoses",
                  ", ".join(f"#{n['id']} ({n['detail'].get('parent')}'s: {', '.join(n['detail']['diagnoses'])})"
                            for n in diag) or f"none; profiled nodes: {profiled or 'none'}")

    mem = [n for n in llm_nodes if n["detail"].get("memory")]
    rep.check(bool(mem), "prompts carry memory (knowledge entries retrieved for the task)",
              f"{len(mem)} of {len(llm_nodes)} prompts")

    rid1 = ids.get("run1")
    won = sorted((k[1], k[2], e["id"]) for k, e in learned_at.items() if k[0] == rid1)
    rep.check(bool(won), "run 1's verified wins were admitted to memory",
              ", ".join(f"{t} #{n} as {i}" for t, n, i in won) or "none")

    bad, refused = [], []
    for run, tasks in runs.items():
        rid = ids[run]
        for t in tasks:
            for n in t["nodes"].values():
                e = learned_at.get((rid, t["name"], n["id"]))
                pm = parent_ms(t, n)
                faster = n.get("verdict") == "measured" and n.get("time_ms") and pm and n["time_ms"] < pm
                if e and not (faster and n["time_ms"] <= ADMIT_RATIO * pm):
                    bad.append(f"{t['name']} #{n['id']} ({n.get('verdict')})")
                if n["parent"] is not None and not e:
                    why = ("not verified: " + n.get("verdict", "not measured")) if n.get("verdict") != "measured" \
                        else ("slower than its parent" if not faster else "within timing noise")
                    refused.append(f"{t['name']} #{n['id']} ({why})")
    rep.check(not bad, "nothing unverified or slower was admitted",
              ("admitted anyway: " + ", ".join(bad)) if bad else
              ("kept out: " + "; ".join(refused)) if refused else "nothing to keep out")

    src = next((e for k, e in learned_at.items() if k[0] == rid1 and k[1] == roles["learned_from"]),
               None)
    sim = [n for n in tasks2.get(roles["similar"], {"nodes": {}})["nodes"].values() if n["proposer"] == "llm"]
    found = [n for n in sim if src and src["id"] in n["detail"].get("memory", [])
             and src["id"] in n["detail"].get("prompt", {}).get("text", "")]
    rep.check(bool(found), f"run 2's prompt for {roles['similar']} carries what run 1 learned on "
              f"{roles['learned_from']}",
              (f"{src['id']} in the prompt of #{found[0]['id']} (memory ids: "
               f"{', '.join(found[0]['detail']['memory'])})") if found else
              (f"{src['id'] if src else 'no entry learned from ' + roles['learned_from']}; run 2's prompts "
               f"had: {[n['detail'].get('memory') for n in sim]}"))
    if found:
        text = found[0]["detail"]["prompt"]["text"]
        sec = text.split("## Knowledge that matches this task", 1)[-1].split("\n## ", 1)[0]
        for line in sec.strip().splitlines():
            if src["id"] in line:
                rep.say(f"         {line.strip()[:200]}")

    key = ("sk-demo-" + "SECRET").encode()  # every demo key starts so; never printed
    sent = [r["headers"].get("authorization", "") for run in ("run1", "run2")
            for r in (requests_by_task(out, run)[0] or {"requests": []})["requests"]]
    files, hits = key_nowhere(out, key)
    rep.check(bool(sent) and all("the key in $" in a for a in sent) and not hits,
              "the API key was sent with every request and is stored nowhere",
              f"{len(sent)} requests carried it; {files} files under OUT_DIR searched "
              f"(run store and WAL, memory, logs, caches)" + (f"; FOUND in {hits}" if hits else ""))

    failed = sum(1 for c in rep.checks if c is False)
    rep.say()
    rep.say(f"{'all claims hold' if not failed else f'{failed} claim(s) FAILED'} "
            f"({sum(1 for c in rep.checks if c)} passed, {sum(1 for c in rep.checks if c is None)} n/a)")
    return 1 if failed else 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "get":
        cmd_get(load(argv[1]), argv[2])
    elif len(argv) == 4 and argv[0] == "script":
        cmd_script(load(argv[1]), argv[2], argv[3])
    elif len(argv) == 3 and argv[0] == "summary":
        return cmd_summary(argv[1], argv[2])
    else:
        sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
