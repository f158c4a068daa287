#!/usr/bin/env python3
"""Builds the natural retrieval set from its hand-written sources.

Hand-written (see README.md): pairs/*.txt, memories ("M:") each followed by
a question it answers in other words ("Q:"), or standing alone as a near
miss; unanswerable.txt, questions no memory answers.

Generated here, deterministically: the bulk of the distractor memories, from
templates over hand-written vocabularies. Two kinds:
  - facts of the same kinds as the hand-written ones (who leads what, where a
    service stores data, when a meeting is, what someone prefers, what broke)
    about people, teams and systems that no question asks about: near misses
    by topic (same relation, different subject and fact);
  - side facts about the hand-written memories' own subjects (the mobile
    team, the payments service, Alice...) on relations no question asks
    about (their Slack channel, cost centre, dashboard, repository):
    near misses by subject (same subject, different fact).
The vocabularies of the first kind are disjoint from the names in the
hand-written memories, and the relations of the second kind from what the
questions ask, so that no generated memory answers a question.

Run from this directory: python3 generate.py (writes memories.jsonl,
pairs.jsonl, unanswerable.jsonl).
"""
import glob
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))

PEOPLE = """Abena Adrian Agnieszka Ahmed Akira Amara Anders Andrea Anika Arjun Astrid Aurelio
Beatriz Benedikt Bianca Callum Carmen Cyrus Dalia Darius Delphine Desmond Dorota Eamon Edith
Eleni Emil Esra Esteban Felix Filippa Gideon Greta Hakon Helga Hugo Idris Ines Isolde Jamal
Joaquin Jonas Junaid Kaito Kamala Karin Lars Leila Liam Lucia Magnus Malik Mateo Mei Miriam
Mykola Nils Noor Olga Omar Orla Pablo Petra Rafael Rania Rashid Ravi Rein Ruth Sabine Selma
Soren Stella Tariq Thea Tobias Ugo Valentina Wiebke Yusuf Zainab Zofia""".split()

TEAMS = """growth partnerships localisation observability reliability firmware compliance procurement
recruiting research documentation developer-relations warehouse-robotics fleet pricing ads
identity messaging media-pipeline inventory logistics storefront kiosk voice-assistant
forecasting""".split()

SERVICES = """ledger-sync quote-engine route-planner tax-calculator label-printer stock-levels
coupon-service shipment-tracker price-watcher catalog-import media-resizer voice-gateway
forecast-api kiosk-backend partner-portal fleet-telemetry fraud-scorer loyalty-points
returns-service review-moderator translation-memory doc-builder audit-trail consent-manager
sms-relay barcode-scanner slot-booker warranty-claims supplier-feed carrier-rates
subtitle-sync thumbnail-cache geo-fence ticket-router invoice-ocr survey-engine
payout-scheduler badge-printer robot-dispatcher chatbot-core""".split()

STORES = ["MongoDB", "DynamoDB", "Cassandra", "CockroachDB", "MariaDB", "ClickHouse", "SQLite",
          "Memcached", "Bigtable", "Neo4j", "InfluxDB", "TimescaleDB", "Couchbase", "ScyllaDB"]
DATA = ["audit events", "shipment records", "price snapshots", "customer reviews", "label templates",
        "route plans", "voice transcripts", "coupon codes", "fraud scores", "consent receipts",
        "barcode scans", "survey answers", "warranty files", "carrier quotes", "supplier catalogues"]
LANGS = ["Rust", "Elixir", "Scala", "Haskell", "Clojure", "C#", "Swift", "Dart", "Zig", "OCaml",
         "TypeScript", "Lua", "Julia", "F#"]
TOOLS = ["Bazel", "Gradle", "Nix", "Pants", "Buck2", "Earthly", "Tilt", "Skaffold", "Helmfile",
         "Kustomize", "Ansible", "Chef", "Puppet", "SaltStack", "Nomad", "Consul"]
CITIES = ["Porto", "Krakow", "Tartu", "Ghent", "Bilbao", "Lyon", "Gothenburg", "Brno", "Cork",
          "Utrecht", "Valencia", "Turin", "Aarhus", "Tampere", "Graz", "Bologna", "Leipzig", "Nantes"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
TIMES = ["08:00", "08:30", "09:00", "10:15", "11:00", "11:45", "13:00", "14:30", "15:15", "16:00", "16:45"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
MEETINGS = ["demo", "sync", "triage", "design review", "roadmap review", "pairing session", "office hour",
            "retro", "backlog grooming", "architecture forum"]
ERRORS = ["HTTP 502 errors", "timeouts", "empty responses", "duplicate records", "stale data",
          "slow pages", "malformed JSON", "wrong totals", "missing images", "truncated files"]
CAUSES = ["a full disk", "an expired token", "a bad config push", "a noisy neighbour", "a kernel upgrade",
          "a library bump", "a cron overlap", "a network partition", "an unbounded query", "a typo in a flag"]
HOBBIES = ["bouldering", "sourdough baking", "sailing", "birdwatching", "choir singing", "trail running",
           "pottery", "chess", "gardening", "woodworking", "salsa dancing", "astronomy"]
SNACKS = ["liquorice", "dark chocolate", "pretzels", "dried mango", "rice crackers", "almonds",
          "popcorn", "gummy bears"]
METRICS = ["p99 latency", "error rate", "queue depth", "CPU usage", "heap size", "lag", "5xx rate",
           "open connections"]
REPOS = ["platform-monorepo", "apps", "services", "infra-live", "tools", "sdk", "web", "pipelines"]
COLOURS = ["purple", "orange", "yellow", "grey", "navy", "lime", "magenta", "beige"]


def generic(rng):
    """Facts of the hand-written kinds about generated subjects."""
    p, q = rng.sample(PEOPLE, 2)
    t = rng.choice(TEAMS)
    s, s2 = rng.sample(SERVICES, 2)
    templates = [
        lambda: f"{p} leads the {t} team since {rng.choice(MONTHS)}.",
        lambda: f"{p} reports to {q} on the {t} team.",
        lambda: f"{p} owns {s} and reviews every change to it.",
        lambda: f"{p} is on call for {s} the week of {rng.randint(1, 28)} {rng.choice(MONTHS)}.",
        lambda: f"{p} works from {rng.choice(CITIES)} and starts at {rng.choice(TIMES)}.",
        lambda: "{} prefers {} over {} for new tools.".format(p, *rng.sample(LANGS, 2)),
        lambda: f"{p} is away from {rng.randint(1, 14)} to {rng.randint(15, 28)} {rng.choice(MONTHS)}.",
        lambda: f"{p} enjoys {rng.choice(HOBBIES)} at the weekend.",
        lambda: f"{p} keeps a stash of {rng.choice(SNACKS)} in the top drawer.",
        lambda: f"{p} joined the {t} team from {rng.choice([x for x in TEAMS if x != t])} in {rng.choice(MONTHS)}.",
        lambda: f"{s} stores its {rng.choice(DATA)} in {rng.choice(STORES)}.",
        lambda: f"{s} is written in {rng.choice(LANGS)} and built with {rng.choice(TOOLS)}.",
        lambda: f"{s} calls {s2} to fetch {rng.choice(DATA)}.",
        lambda: f"{s} alerts the {t} team when {rng.choice(METRICS)} exceeds {rng.randint(2, 95)}.",
        lambda: f"{s} runs {rng.randint(2, 40)} replicas in {rng.choice(CITIES)}.",
        lambda: f"{s} is deployed with {rng.choice(TOOLS)} every {rng.choice(DAYS)}.",
        lambda: f"{s} keeps {rng.choice(DATA)} for {rng.randint(2, 36)} months.",
        lambda: f"The {t} team's {rng.choice(MEETINGS)} is on {rng.choice(DAYS)} at {rng.choice(TIMES)}.",
        lambda: f"The {t} team moved its {rng.choice(MEETINGS)} to {rng.choice(DAYS)}.",
        lambda: f"The {t} team owns {s} and {s2}.",
        lambda: f"The {t} team decided to rewrite {s} in {rng.choice(LANGS)}.",
        lambda: "The {} team chose {} over {} for deployments.".format(t, *rng.sample(TOOLS, 2)),
        lambda: f"The {t} team has {rng.randint(3, 14)} engineers and sits in {rng.choice(CITIES)}.",
        lambda: f"Incident {rng.randint(100, 999)}: {s} returned {rng.choice(ERRORS)} for "
                f"{rng.randint(3, 90)} minutes after {rng.choice(CAUSES)}.",
        lambda: f"In {rng.choice(MONTHS)}, {s} was degraded because of {rng.choice(CAUSES)}.",
        lambda: f"The postmortem for {s} found {rng.choice(CAUSES)} behind the {rng.choice(ERRORS)}.",
        lambda: f"To restart {s}, run the {rng.choice(TOOLS)} job named restart-{s}.",
        lambda: f"To get access to {s}, ask {p} in the {t} channel.",
        lambda: f"Changes to {s} need a review from the {t} team.",
        lambda: f"The {t} team's quarterly goal is to cut {rng.choice(METRICS)} of {s} by half.",
    ]
    return rng.choice(templates)()


# Subjects of the hand-written memories, and side facts about them that no
# question asks for (near misses by subject).
CORE = ["Alice", "Bogdan", "Chen Wei", "Dana", "Farah", "Gustavo", "Ivan", "Kofi", "Lena", "Marco",
        "Nadia", "Priya", "Tomasz", "Victor", "Yara", "the mobile team", "the payments service",
        "the search cluster", "the platform team", "the data warehouse", "the support team",
        "the billing system", "the Berlin office", "the Android app", "the iOS app",
        "the status page", "the staging environment", "the checkout squad", "the security team",
        "the legal team", "the design team", "the orders service", "the API gateway"]


def side(rng):
    c = rng.choice(CORE)
    up = c[0].upper() + c[1:]
    poss = up + ("'" if c.endswith("s") else "'s")
    slug = c.replace("the ", "").replace(" ", "-").lower()
    templates = [
        lambda: f"{poss} Slack channel is #{slug}-{rng.choice(['chat', 'talk', 'help', 'ops', 'news'])}.",
        lambda: f"{poss} cost centre is CC-{rng.randint(1000, 9999)}.",
        lambda: f"{poss} Grafana dashboard is in the folder {slug}-{rng.choice(['main', 'v2', 'legacy'])}.",
        lambda: f"{poss} code lives in the {rng.choice(REPOS)} repository under {slug}/.",
        lambda: f"{poss} badge colour on the org chart is {rng.choice(COLOURS)}.",
        lambda: f"{poss} wiki page was last updated in {rng.choice(MONTHS)}.",
        lambda: f"{poss} Jira project key was {slug[:3].upper()}{rng.randint(1, 9)} before the move to Linear.",
        lambda: f"{poss} shared drive folder holds {rng.randint(20, 900)} documents.",
        lambda: f"{poss} mailing list is {slug}@lists.example.com.",
        lambda: f"{poss} quarterly survey score was {rng.randint(60, 95)} out of 100.",
    ]
    return rng.choice(templates)()


def read_hand_written():
    memories, pairs = [], []
    for path in sorted(glob.glob(os.path.join(HERE, "pairs", "*.txt"))):
        base = os.path.splitext(os.path.basename(path))[0]
        last = None
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            line = line.strip()
            if line.startswith("M: "):
                last = f"{base}-{n}"
                memories.append({"ID": last, "Content": line[3:]})
            elif line.startswith("Q: "):
                if last is None:
                    raise SystemExit(f"{path}:{n}: a question must follow its memory")
                pairs.append({"Query": line[3:], "Expected": last})
                last = None
            elif line and not line.startswith("#"):
                raise SystemExit(f"{path}:{n}: not a memory, a question or a comment")
    unanswerable = [{"Query": line.strip()[3:]} for line in open(os.path.join(HERE, "unanswerable.txt"), encoding="utf-8")
                    if line.startswith("Q: ")]
    return memories, pairs, unanswerable


def main():
    rng = random.Random(37)
    memories, pairs, unanswerable = read_hand_written()
    seen = {m["Content"] for m in memories}
    generated = []
    while len(generated) < 2750:
        text = side(rng) if rng.random() < 0.12 else generic(rng)
        if text not in seen:
            seen.add(text)
            generated.append(text)
    memories += [{"ID": f"g-{i + 1}", "Content": t} for i, t in enumerate(generated)]
    rng.shuffle(memories)  # hand-written memories are not grouped at the start
    for name, rows in [("memories.jsonl", memories), ("pairs.jsonl", pairs), ("unanswerable.jsonl", unanswerable)]:
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(memories)} memories ({len(memories) - len(generated)} hand-written), "
          f"{len(pairs)} pairs, {len(unanswerable)} unanswerable")


if __name__ == "__main__":
    main()
