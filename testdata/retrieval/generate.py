#!/usr/bin/env python3
"""Generates the memory retrieval set (memories.jsonl, pairs.jsonl) from
concepts.txt, deterministically. Written for toolsvc; same licence as the
repository.

Each memory states one fact in the words listed first for its concepts:
subject, action, object, time. Each query asks for one memory with other
words of three of its four concepts, so a query shares no content word with
the memory it should find (the Go test checks this after stemming):
full-text search cannot find it, recall by meaning can.

Run from the repository root: python3 testdata/retrieval/generate.py
"""
import json
import random
import os

HERE = os.path.dirname(os.path.abspath(__file__))
MEMORIES, PAIRS = 3000, 240


def load():
    slots = {}
    for line in open(os.path.join(HERE, "concepts.txt")):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        slot, words = line.split(":", 1)
        groups = [g.split() for g in words.split("|")]
        slots.setdefault(slot.strip(), []).extend(groups)
    return slots


def main():
    rnd = random.Random(17)
    slots = load()
    order = ["subject", "action", "object", "time"]
    seen, memories = set(), []
    while len(memories) < MEMORIES:
        combo = tuple(rnd.randrange(len(slots[s])) for s in order)
        if combo in seen:
            continue
        seen.add(combo)
        words = [slots[s][i][0] for s, i in zip(order, combo)]
        text = "The %s %s %s %s." % tuple(words)
        memories.append({"id": "m%04d" % len(memories), "content": text, "combo": combo})
    pairs = []
    for m in rnd.sample(memories, PAIRS):
        drop = rnd.randrange(len(order))
        words = []
        for k, (s, i) in enumerate(zip(order, m["combo"])):
            if k == drop:
                continue
            group = slots[s][i]
            words.append(rnd.choice(group[1:]))
        pairs.append({"query": "which %s?" % " ".join(words), "expected": m["id"]})
    with open(os.path.join(HERE, "memories.jsonl"), "w") as f:
        for m in memories:
            f.write(json.dumps({"id": m["id"], "content": m["content"]}) + "\n")
    with open(os.path.join(HERE, "pairs.jsonl"), "w") as f:
        for p in pairs:
            f.write(json.dumps(p) + "\n")


if __name__ == "__main__":
    main()
