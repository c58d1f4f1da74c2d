#!/usr/bin/env python3
"""Writes the recall benchmark's fixture: bench/recall/repo/ and bench/recall/questions.jsonl.

The texts are in corpus_memories.py, corpus_other.py and corpus_questions.py; this script only
lays them out as kb stores them (docs/formats.md): memory and decision files with sorted keys and
single-quoted UTC timestamps, Copilot records one JSON object a line, sessions in session.md and
sessions/. Ids are given here, and each question's keys are turned into (store, id) pairs.

The output is deterministic (a fixed seed): run it again after editing a corpus file, then
`kb --root bench/recall/repo check` must report no problem.

Usage: python3 bench/recall/make_fixture.py
"""

import datetime as dt
import json
import random
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus_memories import MEMORIES  # noqa: E402
from corpus_other import DECISIONS, RECORDS, SESSIONS  # noqa: E402
from corpus_questions import QUESTIONS  # noqa: E402

SEED = 20261125
UTC = dt.timezone.utc
# Memories are spread over these months, records over the later part (Copilot memory came later).
MEMORIES_FROM = dt.datetime(2026, 5, 4, 8, 0, tzinfo=UTC)
MEMORIES_TO = dt.datetime(2026, 11, 23, 18, 0, tzinfo=UTC)
RECORDS_FROM = dt.datetime(2026, 7, 15, 8, 0, tzinfo=UTC)
RECORDS_TO = dt.datetime(2026, 11, 22, 18, 0, tzinfo=UTC)
DECISIONS_FROM = dt.datetime(2026, 5, 6, 9, 0, tzinfo=UTC)
DECISIONS_TO = dt.datetime(2026, 11, 12, 17, 0, tzinfo=UTC)

SIGNALS = ["preference", "correction", "decision", "context", "pattern"]


def iso(t, micro=True):
    """Python isoformat() of a UTC time: 6 fraction digits, none when they are 0."""
    if not micro:
        t = t.replace(microsecond=0)
    return t.isoformat()


def slug(text):
    """kb's file-name slug: the first 50 characters, lower-cased, runs outside a-z0-9 as one `-`."""
    return re.sub(r"[^a-z0-9]+", "-", text[:50].lower()).strip("-")


def quoted(s):
    """A YAML scalar as kb writes one: single-quoted when a plain scalar could misread."""
    if re.search(r"[:#,\[\]{}&*!|>'\"%@`]", s) or s != s.strip() or s[:1] in "-?":
        return "'" + s.replace("'", "''") + "'"
    return s


def spread(rng, n, start, end):
    """n increasing times between start and end, irregularly spaced, in working hours mostly."""
    span = (end - start).total_seconds()
    points = sorted(rng.random() for _ in range(n))
    times = []
    for p in points:
        t = start + dt.timedelta(seconds=p * span)
        t = t.replace(hour=rng.choice([7, 8, 9, 9, 10, 10, 11, 13, 14, 14, 15, 16, 17, 19, 22]),
                      minute=rng.randrange(60), second=rng.randrange(60),
                      microsecond=rng.choice([0, rng.randrange(1_000_000)]))
        times.append(t)
    # Keep them increasing after the hour was changed.
    for i in range(1, len(times)):
        if times[i] <= times[i - 1]:
            times[i] = times[i - 1] + dt.timedelta(minutes=rng.randrange(3, 90))
    return times


def fnv_id(subject, fact, digits=8):
    h = 0xCBF29CE484222325
    for b in (subject + "\0" + fact).encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    h = (h ^ (h >> 32)) & 0xFFFFFFFF
    return "mem-" + format(h, "08x")[:digits]


def frontmatter(pairs):
    lines = ["---"]
    for key, value in sorted(pairs.items()):
        if isinstance(value, list):
            if value:
                lines.append(f"{key}:")
                lines.extend(f"- {quoted(v)}" for v in value)
            else:
                lines.append(f"{key}: []")
        else:
            lines.append(f"{key}: {value}")
    lines.append("---")
    return "\n".join(lines) + "\n"


def write_memories(rng, root):
    order = sorted(MEMORIES, key=lambda m: rng.random() + (0.7 if m.get("late") or m.get("auto_decay") else 0.0))
    times = spread(rng, len(order), MEMORIES_FROM, MEMORIES_TO)
    ids = {}
    folder = root / ".co-cli/knowledge/memories"
    folder.mkdir(parents=True)
    for n, (m, created) in enumerate(zip(order, times), start=1):
        ids[m["key"]] = n
        tags = m["tags"]
        category = next((s for s in SIGNALS if s in tags), None)
        if m.get("auto_decay"):
            source = "auto_decay"
        else:
            source = "detected" if category else "user-told"
        fm = {
            "auto_category": category or "null",
            "created": f"'{iso(created)}'",
            "id": n,
            "source": source,
            "tags": tags,
        }
        if m.get("protected") or m.get("type") == "core_context":
            fm["decay_protected"] = "true"
        if m.get("importance"):
            fm["importance"] = m["importance"]
        if m.get("type"):
            fm["type"] = m["type"]
        if m.get("updated"):
            later = min(created + dt.timedelta(days=rng.randrange(5, 40), minutes=rng.randrange(600)),
                        MEMORIES_TO)
            fm["updated"] = f"'{iso(later)}'"
            fm["consolidation_reason"] = "'merged a newer note about the same steps'"
        text = m["text"]
        (folder / f"{n:03}-{slug(text)}.md").write_text(frontmatter(fm) + "\n" + text + "\n")
    return ids


def write_records(rng, root):
    order = list(RECORDS)
    rng.shuffle(order)
    kb_written = [r for r in order if not r.get("copilot")]
    times = iter(spread(rng, len(kb_written), RECORDS_FROM, RECORDS_TO))
    ids, lines = {}, []
    for r in order:
        if r.get("copilot"):
            rid = fnv_id(r["subject"], r["fact"], digits=6)
            record = {"id": rid, "subject": r["subject"], "fact": r["fact"], "citations": r["citations"],
                      "source": "copilot-cli"}
        else:
            rid = fnv_id(r["subject"], r["fact"])
            created = iso(next(times), micro=False)
            record = {"id": rid, "subject": r["subject"], "fact": r["fact"], "citations": r["citations"]}
            if r.get("reason"):
                record["reason"] = r["reason"]
            record.update({"source": {"agent": "kb"}, "created": created, "updated": created})
            if r.get("votes"):
                up, down = r["votes"]
                record["votes"] = {"up": up, "down": down}
        assert rid not in ids.values(), rid
        ids[r["key"]] = rid
        lines.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    (root / ".github").mkdir()
    (root / ".github/copilot-memories.jsonl").write_text("\n".join(lines) + "\n")
    return ids


def write_decisions(rng, root):
    times = spread(rng, len(DECISIONS), DECISIONS_FROM, DECISIONS_TO)
    ids = {d["key"]: n for n, d in enumerate(DECISIONS, start=1)}
    created_of = {d["key"]: t for d, t in zip(DECISIONS, times)}
    folder = root / ".co-cli/knowledge/decisions"
    folder.mkdir(parents=True)
    for d, created in zip(DECISIONS, times):
        n = ids[d["key"]]
        fm = {"created": f"'{iso(created, micro=False)}'", "id": n, "status": d["status"], "tags": d["tags"],
              "type": d["type"]}
        if d["superseded_by"]:
            fm["superseded_by"] = ids[d["superseded_by"]]
            fm["updated"] = f"'{iso(created_of[d['superseded_by']], micro=False)}'"
        elif d["status"] in ("archived", "rejected"):
            later = created + dt.timedelta(days=rng.randrange(3, 30), hours=rng.randrange(8))
            fm["updated"] = f"'{iso(later, micro=False)}'"
        title = d["text"].split("\n")[0]
        (folder / f"{n:03}-{slug(title)}.md").write_text(frontmatter(fm) + "\n" + d["text"] + "\n")
    return ids


def write_sessions(root):
    ids = {}
    folder = root / ".co-cli/knowledge/sessions"
    folder.mkdir(parents=True)
    for s in SESSIONS:
        fm = {"focus": quoted(s["focus"]), "started": f"'{s['started']}'", "updated": f"'{s['updated']}'"}
        body = frontmatter(fm) if s["ended"] is None else None
        if s["ended"] is None:
            (root / ".co-cli/knowledge/session.md").write_text(body + "\n" + s["summary"] + "\n")
            ids[s["key"]] = "session"
            continue
        fm["ended"] = f"'{s['ended']}'"
        started = dt.datetime.fromisoformat(s["started"]).astimezone(UTC)
        stem = started.strftime("%Y%m%dT%H%M%SZ") + "-" + slug(s["focus"])
        (folder / f"{stem}.md").write_text(frontmatter(fm) + "\n" + s["summary"] + "\n")
        ids[s["key"]] = stem
    return ids


def main():
    rng = random.Random(SEED)
    root = HERE / "repo"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir()
    ids = {
        "md": write_memories(rng, root),
        "rec": write_records(rng, root),
        "dec": write_decisions(rng, root),
        "ses": write_sessions(root),
    }
    # A store of this size is over co-cli's default of 200 memories; the project raised it.
    (root / ".co-cli/settings.json").write_text('{\n  "memory_max_count": 500\n}\n')
    (root / ".gitattributes").write_text(".github/copilot-memories.jsonl merge=union\n")

    store_name = {"md": "md", "rec": "copilot", "dec": "decision", "ses": "session"}
    out = []
    for q in QUESTIONS:
        relevant = []
        for ref in q["relevant"]:
            store, key = ref.split(":", 1)
            relevant.append({"store": store_name[store], "id": ids[store][key]})
        assert 1 <= len(relevant) <= 4, q
        assert len({(r["store"], r["id"]) for r in relevant}) == len(relevant), q
        out.append(json.dumps({"q": q["q"], "relevant": relevant, "kind": q["kind"]}, ensure_ascii=False))
    assert len({q["q"] for q in QUESTIONS}) == len(QUESTIONS), "a question twice"
    (HERE / "questions.jsonl").write_text("\n".join(out) + "\n")

    counts = {store_name[s]: len(v) for s, v in ids.items()}
    kinds = {}
    for q in QUESTIONS:
        kinds[q["kind"]] = kinds.get(q["kind"], 0) + 1
    print(f"items: {counts}; questions: {len(QUESTIONS)} {kinds}")


if __name__ == "__main__":
    main()
