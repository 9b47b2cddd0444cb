#!/usr/bin/env python3
"""Measures a second stage over the gateway's ranking: late interaction over a model's token vectors.

Issue #34 asks for a reranker where it pays. The candidates are the gateway's own: `mcplex bench
retrieval --rankings` writes each query's top 30 by each ranking, with the part of the request
that placed each hit. This reorders the top `depth` of the gateway's list by a mix of each hit's
score and its late-interaction score (for each token of the text its group was ranked by, the
whole request or one part, the cosine of the closest token of the tool's passage, averaged),
both min-max scaled over the candidates, and reports recall@5 (and steps@5) for each depth and
share of the second stage, beside the gateway's own. Each group keeps the places the gateway gave
it, so a request in parts keeps a place for every part. The gateway's score is the fused one for
a request ranked whole, and the hit's place in the interleaved list (1/place) for a request in
parts. Run the benchmark without `--sample`: the rankings are then in the set's order (a set
may hold one text twice with different labels: MetaTool's does), which is how they are graded.

Two models, both made with `scripts/train_search_model.py` (its JAX forward pass is used here):
the built-in model's f32 weights (`--out /tmp/tuned`), whose token vectors were never trained
for late interaction, and that model trained further on the same pairs for late interaction
(`--objective late --epochs 0.5 --source /tmp/tuned --out /tmp/late`).

    mcplex bench retrieval --model builtin --rankers gateway --rounds 0 --rankings \\
        --corpus crates/mcplex-bench/data/livemcp527.tools.json \\
        --queries crates/mcplex-bench/data/livemcp527.agent-search.dev.json ... --out live.json
    /tmp/train/bin/python scripts/study_rerank.py --report live.json \\
        --corpus crates/mcplex-bench/data/livemcp527.tools.json --model /tmp/late
"""
import argparse
import json
import os

import numpy as np

from train_search_model import encode, load_model, passage, token_states

DEPTHS = (10, 20)
SHARES = (0.2, 0.35, 0.5, 1.0)
TOKENS = 128  # the gateway's cut
BATCH = 32


class TokenVectors:
    """Each text's unit token vectors (its mask's tokens, [CLS] and [SEP] among them)."""

    def __init__(self, model):
        import jax

        self.config, self.tokenizer, _, self.weights = load_model(model)
        self.forward = jax.jit(lambda w, ids, mask: token_states(self.config, w, ids, mask))
        self.known = {}

    def add(self, texts):
        texts = [t for t in dict.fromkeys(texts) if t not in self.known]
        for start in range(0, len(texts), BATCH):
            chunk = texts[start:start + BATCH]
            padded = chunk + [''] * (BATCH - len(chunk))
            ids, mask = encode(self.tokenizer, padded, TOKENS)
            states = np.asarray(self.forward(self.weights, ids, mask))
            for row, text in enumerate(chunk):
                vectors = states[row, :int(mask[row].sum())]
                self.known[text] = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def late(self, query, passage_text):
        return float((self.known[query] @ self.known[passage_text].T).max(1).mean())


def scaled(values):
    values = np.asarray(values, dtype=np.float64)
    spread = values.max() - values.min()
    return (values - values.min()) / spread if spread > 0 else np.zeros_like(values)


def reranked(ranking, passages, vectors, depth, share):
    """The gateway's ids with each group's hits in its top `depth` reordered within the group's
    places."""
    hits = ranking['hits']
    ids = [hit[0] for hit in hits]
    groups = {}
    for place, (_, part, _) in enumerate(hits[:depth]):
        groups.setdefault(part, []).append(place)
    for part, places in groups.items():
        text = ranking['query'] if part is None else ranking['parts'][part]
        fused = scaled([hits[p][2] for p in places])
        late = scaled([vectors.late(text, passages[hits[p][0]]) for p in places])
        mixed = (1 - share) * fused + share * late
        order = sorted(range(len(places)), key=lambda i: -mixed[i])
        for place, i in zip(places, order):
            ids[place] = hits[places[i]][0]
    return ids


def graded(path):
    """Each graded query of the set, in its order, as the benchmark reads it: its text, its
    relevant tools and, where the set names them, each step's tools."""
    graded = []
    for query in json.load(open(path))['queries']:
        labels = [label for label in query.get('labels', []) if label.get('relevance', 0) >= 1]
        steps = {}
        for label in labels:
            if label.get('step') is not None:
                steps.setdefault(label['step'], set()).add(label['tool_id'])
        if labels:
            graded.append((query['query'], {label['tool_id'] for label in labels},
                           list(steps.values())))
    return graded


def score(rankings, grades, rank):
    recall, steps, with_steps = 0.0, 0.0, 0
    for ranking, (text, relevant, step_tools) in zip(rankings, grades, strict=True):
        if ranking['query'] != text:
            raise SystemExit('the rankings are not in the set\'s order: run without --sample')
        top = set(rank(ranking)[:5])
        recall += len(top & relevant) / len(relevant)
        if step_tools:
            with_steps += 1
            steps += sum(1 for tools in step_tools if tools & top) / len(step_tools)
    shown = f'{recall / len(rankings):.3f}'
    return shown + (f' / {steps / with_steps:.3f}' if with_steps else '')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--report', required=True, help='bench retrieval --rankings output')
    parser.add_argument('--corpus', required=True, help="the report's tools file")
    parser.add_argument('--model', required=True, help='an f32 model directory')
    args = parser.parse_args()
    tools = json.load(open(args.corpus))['tools']
    passages = {tool.get('tool_id') or f"{tool['server']}:{tool['tool']}":
                passage(tool['tool'], tool.get('description') or '') for tool in tools}
    report = json.load(open(args.report))
    vectors = TokenVectors(args.model)
    vectors.add(passages.values())
    columns = [(f'{depth}/{share}', depth, share) for depth in DEPTHS for share in SHARES]
    print('set | gateway | ' + ' | '.join(name for name, _, _ in columns))
    for found in report['sets']:
        rankings = found['rankers']['gateway']['rankings']
        vectors.add([r['query'] for r in rankings] + [p for r in rankings for p in r['parts']])
        grades = graded(found['queries'])
        row = [score(rankings, grades, lambda r: [hit[0] for hit in r['hits']])]
        for _, depth, share in columns:
            row.append(score(rankings, grades,
                             lambda r: reranked(r, passages, vectors, depth, share)))
        name = os.path.basename(found['queries']).removesuffix('.json')
        print(f'{name} ({len(rankings)}) | ' + ' | '.join(row), flush=True)


if __name__ == '__main__':
    main()
