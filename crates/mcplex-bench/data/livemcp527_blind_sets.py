#!/usr/bin/env python3
"""Writes the blind livemcp527 sets (`livemcp527.blind-{tasks,search}.{dev,heldout}.json`) from
the rows in `blind/` (README.md, "How the blind sets were made").

- `blind/tasks.gN.jsonl`: `id`, `task` (a user's task, written with the catalog at hand),
  `task_steps` (for each tool step, every tool of the catalog that does it).
- `blind/searches.gN.jsonl`: `id` (the task it was typed for), `query` (a search an agent typed
  for it without ever seeing the catalog), `steps` (labelled afterwards: for each thing the
  query asks for, every tool that does it; empty when no tool of the catalog does).

A task and every search typed for it fall in the same half, by the first byte of the SHA-256 of
the task's text (even: dev), so no held-out search shares its task with a dev one. Every label is
checked against the catalog; a search with no step any tool does is left out, and so is a repeat.
Run it after editing a row: python3 crates/mcplex-bench/data/livemcp527_blind_sets.py
"""
import hashlib
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
GROUPS = ['g1', 'g2', 'g3', 'g4', 'g5']


def rows(kind, group):
    with open(os.path.join(HERE, 'blind', f'{kind}.{group}.jsonl'), encoding='utf-8') as lines:
        return [json.loads(line) for line in lines if line.strip()]


def half(task):
    return 'dev' if hashlib.sha256(task.encode('utf-8')).digest()[0] % 2 == 0 else 'heldout'


def catalog_ids():
    """Every `server:tool` of livemcp527."""
    catalog = json.load(open(os.path.join(HERE, 'livemcp527.tools.json'), encoding='utf-8'))
    return {f"{t['server']}:{t['tool']}" for t in catalog['tools']}


def labels(steps, known, where):
    """The labels of a query whose step `i` is done by the tools `steps[i]`, each checked
    against `known`."""
    out = []
    for step, tools in enumerate(steps):
        for tool in tools:
            if tool not in known:
                raise SystemExit(f'{where}: no tool {tool!r} in livemcp527')
            out.append({'tool_id': tool, 'relevance': 1, 'step': step})
    return out


def write_set(path, split, queries):
    """One query set file, as `bench retrieval` reads it."""
    with open(path, 'w', encoding='utf-8') as out:
        json.dump({'corpus_version': 'livemcp527', 'split': split, 'queries': queries}, out,
                  indent=1, ensure_ascii=False)
        out.write('\n')
    print(f'{path}: {len(queries)} queries')


def main():
    known = catalog_ids()
    sets = {(kind, h): [] for kind in ('tasks', 'search') for h in ('dev', 'heldout')}
    tasks, seen, left_out = {}, set(), 0
    for group in GROUPS:
        for row in rows('tasks', group):
            tasks[row['id']] = row['task']
            sets[('tasks', half(row['task']))].append({
                'id': f"bt_{row['id']}",
                'query': row['task'],
                'labels': labels(row['task_steps'], known, row['id']),
            })
        for number, row in enumerate(rows('searches', group), 1):
            steps = [tools for tools in row['steps'] if tools]
            if not steps or row['query'] in seen:
                left_out += 1
                continue
            seen.add(row['query'])
            sets[('search', half(tasks[row['id']]))].append({
                'id': f"bs_{row['id']}_{number}",
                'query': row['query'],
                'labels': labels(steps, known, f"{row['id']} search {number}"),
            })
    for (kind, h), queries in sets.items():
        write_set(os.path.join(HERE, f'livemcp527.blind-{kind}.{h}.json'),
                  f'{h} (sha256(task)[0] {"even" if h == "dev" else "odd"})', queries)
    print(f'{left_out} searches left out (no step a tool does, or a repeat)')


if __name__ == '__main__':
    main()
