"""Reference results for the scheduler's spaced-repetition parity tests.

Generates random review sequences (seeded, so every run is the same) and replays them through
the reference implementations: `fsrs` (6.x, fuzzing off) and `supermemo2` (3.x). Prints one
JSON document on stdout; the Swift test replays the same sequences and compares.

    python generate.py --count 1000 --seed 7

Times are Unix milliseconds so that both sides compute with the same instants.
"""

import argparse
import json
import random
import sys
from datetime import datetime, timedelta, timezone

import fsrs
import supermemo2

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MS = timedelta(milliseconds=1)
DAY_MS = 86_400_000
SM2_MAXIMUM_INTERVAL_DAYS = 36_500
# Our ratings and their SM-2 quality (the mapping the scheduler documents).
SM2_QUALITY = {"again": 1, "hard": 3, "good": 4, "easy": 5}
FSRS_RATING = {"again": fsrs.Rating.Again, "hard": fsrs.Rating.Hard, "good": fsrs.Rating.Good, "easy": fsrs.Rating.Easy}
PHASE = {fsrs.State.Learning: "learning", fsrs.State.Review: "review", fsrs.State.Relearning: "relearning"}


def to_datetime(ms):
    return EPOCH + ms * MS


def to_ms(moment):
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - EPOCH) // MS


def pick_rating(rng):
    return rng.choices(["again", "hard", "good", "easy"], weights=[2, 2, 5, 2])[0]


def next_review_ms(rng, now_ms, due_ms):
    """Mostly around the due date, sometimes early the same day, sometimes very late."""
    roll = rng.random()
    if roll < 0.15:
        return now_ms + rng.randint(1_000, 6 * 3_600_000)  # same day, short-term path
    if roll < 0.3:
        return max(now_ms + 1, due_ms - rng.randint(0, 3 * DAY_MS))  # early
    if roll < 0.85:
        return max(now_ms + 1, due_ms + rng.randint(0, 2 * DAY_MS))  # on time
    return max(now_ms + 1, due_ms + rng.randint(2 * DAY_MS, 400 * DAY_MS))  # long overdue


def fsrs_sequences(rng, count):
    sequences = []
    for index in range(count):
        retention = rng.choice([0.9, 0.9, 0.9, 0.8, 0.85, 0.95, 0.97])
        scheduler = fsrs.Scheduler(desired_retention=retention, enable_fuzzing=False)
        start_ms = rng.randint(1_600_000_000_000, 1_800_000_000_000)
        card = fsrs.Card(card_id=index + 1, due=to_datetime(start_ms))
        now_ms = start_ms + rng.randint(0, 3 * DAY_MS)
        steps = []
        for _ in range(rng.randint(1, 30)):
            rating = pick_rating(rng)
            card, _ = scheduler.review_card(card, FSRS_RATING[rating], to_datetime(now_ms))
            steps.append({
                "rating": rating,
                "at": now_ms,
                "phase": PHASE[card.state],
                "step": card.step,
                "stability": card.stability,
                "difficulty": card.difficulty,
                "due": to_ms(card.due),
            })
            now_ms = next_review_ms(rng, now_ms, to_ms(card.due))
        sequences.append({"desiredRetention": retention, "createdAt": start_ms, "steps": steps})
    return sequences


def sm2_sequences(rng, count):
    sequences = []
    for _ in range(count):
        now_ms = rng.randint(1_600_000_000_000, 1_800_000_000_000)
        easiness, interval, repetitions = 2.5, 0, 0
        steps = []
        for index in range(rng.randint(1, 30)):
            rating = pick_rating(rng)
            # supermemo2 reads naive datetimes; ours are UTC.
            moment = to_datetime(now_ms).replace(tzinfo=None)
            if index == 0:
                result = supermemo2.first_review(SM2_QUALITY[rating], moment)
            else:
                result = supermemo2.review(SM2_QUALITY[rating], easiness, interval, repetitions, moment)
            easiness, interval, repetitions = result["easiness"], result["interval"], result["repetitions"]
            if interval > SM2_MAXIMUM_INTERVAL_DAYS:
                break  # the scheduler caps intervals at 100 years; the reference does not
            due_ms = to_ms(datetime.fromisoformat(result["review_datetime"]))
            steps.append({
                "rating": rating,
                "at": now_ms,
                "easeFactor": easiness,
                "intervalDays": interval,
                "repetitions": repetitions,
                "due": due_ms,
            })
            now_ms = next_review_ms(rng, now_ms, due_ms)
        sequences.append({"steps": steps})
    return sequences


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    json.dump({
        "fsrsVersion": getattr(fsrs, "__version__", None) or _version("fsrs"),
        "supermemo2Version": _version("supermemo2"),
        "fsrs": fsrs_sequences(rng, args.count),
        "sm2": sm2_sequences(rng, args.count),
    }, sys.stdout)


def _version(package):
    from importlib.metadata import version
    return version(package)


if __name__ == "__main__":
    main()
