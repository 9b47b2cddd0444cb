#!/usr/bin/env python3
"""Writes the cold livemcp527 sets (`livemcp527.cold-search.{dev,heldout}.json`) and the cold
training strings (`cold/train.jsonl`) from the rows in `cold/` (README.md, "How the cold sets
were made"). The training strings are outside `train/`: the built-in model is not trained on
them (README.md says why).

`cold/searches.gN.jsonl`, one search a line: `task` (a user's task, written by someone who knew
only the servers' names), `query` (a search the same author then typed for it as the agent,
still without the catalog), `parts` (the things the query asks for, without the kind guess) and
`steps` (labelled afterwards by another agent with the catalog: for each part, every tool that
does it; empty when no tool of the catalog does).

The task decides where its searches go, by the first byte of the SHA-256 of its text: odd, the
training strings; 0 mod 4, the dev half; 2 mod 4, the held-out half. So no measured search
shares its task with a trained one. A search with no part any tool does is left out; a part no
tool does stays in a measured search's `parts` without labels, and in training the labelled
parts of such a search are trained alone. Labels are checked against the catalog, and a
repeated query is kept once.
Run it after editing a row: python3 crates/mcplex-bench/data/livemcp527_cold_sets.py
"""
import hashlib
import json
import os

from livemcp527_blind_sets import GROUPS, HERE, catalog_ids, labels, write_set


def where(task):
    byte = hashlib.sha256(task.encode('utf-8')).digest()[0]
    return 'train' if byte % 2 else ('dev' if byte % 4 == 0 else 'heldout')


def main():
    known = catalog_ids()
    sets = {'dev': [], 'heldout': []}
    train, seen, left_out = [], set(), 0
    for group in GROUPS:
        path = os.path.join(HERE, 'cold', f'searches.{group}.jsonl')
        with open(path, encoding='utf-8') as lines:
            rows = [json.loads(line) for line in lines if line.strip()]
        for number, row in enumerate(rows, 1):
            if len(row['parts']) != len(row['steps']):
                raise SystemExit(f'{path}:{number}: parts and steps differ')
            # `step` is the part's place in `parts`, an unlabelled part's included.
            checked = labels(row['steps'], known, f'{path}:{number}')
            labelled = [(part, tools) for part, tools in zip(row['parts'], row['steps']) if tools]
            key = ' '.join(row['query'].lower().split())
            if not labelled or key in seen:
                left_out += 1
                continue
            seen.add(key)
            half = where(row['task'])
            if half == 'train':
                if len(labelled) == len(row['parts']):
                    train.append({'query': row['query'], 'parts': row['parts'],
                                  'steps': row['steps']})
                else:
                    # The query asks for something no tool does: its labelled parts train alone.
                    train.extend({'query': part, 'parts': [part], 'steps': [tools]}
                                 for part, tools in labelled)
                continue
            sets[half].append({
                'id': f'cs_{group}_{number}',
                'query': row['query'],
                'parts': row['parts'],
                'labels': checked,
            })
    for half, queries in sets.items():
        rule = '0' if half == 'dev' else '2'
        write_set(os.path.join(HERE, f'livemcp527.cold-search.{half}.json'),
                  f'{half} (sha256(task)[0] % 4 == {rule})', queries)
    path = os.path.join(HERE, 'cold', 'train.jsonl')
    with open(path, 'w', encoding='utf-8') as out:
        for row in train:
            out.write(json.dumps(row, ensure_ascii=False) + '\n')
    print(f'{path}: {len(train)} strings')
    print(f'{left_out} searches left out (no part a tool does, or a repeat)')


if __name__ == '__main__':
    main()
