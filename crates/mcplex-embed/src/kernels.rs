//! The arithmetic of the forward pass besides the dense products (`product.rs`), on plain
//! row-major `f32` slices: layer normalisation, GELU, and one text's attention. GELU and
//! attention are written without library calls so that the compiler vectorises them, and run
//! in the SIMD context of the instructions `isa.rs` chose.
//!
//! Owns: the numbers. Must not: know the model's shape or its weights' names (`bert.rs`).

use pulp::{Simd, WithSimd};

use crate::isa::dispatch;

/// Each row of `x` (rows of `weight.len()`) normalised to mean 0 and variance 1, then scaled by
/// `weight` and shifted by `bias`.
pub(crate) fn layer_norm(x: &mut [f32], weight: &[f32], bias: &[f32], epsilon: f32) {
    for row in x.chunks_exact_mut(weight.len()) {
        let count = row.len() as f32;
        let mean = row.iter().sum::<f32>() / count;
        let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / count;
        let scale = 1.0 / (variance + epsilon).sqrt();
        for ((value, w), b) in row.iter_mut().zip(weight).zip(bias) {
            *value = (*value - mean) * scale * w + b;
        }
    }
}

/// The activation between a layer's two dense products.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activation {
    /// GELU with the error function (BERT's `gelu`).
    Gelu,
    /// GELU's tanh approximation (`gelu_new`, `gelu_approximate`).
    GeluTanh,
    Relu,
}

pub(crate) fn activate(x: &mut [f32], activation: Activation) {
    dispatch(Activate { x, activation });
}

/// [`activate`]'s loop, compiled in the SIMD context `isa.rs` chose.
struct Activate<'a> {
    x: &'a mut [f32],
    activation: Activation,
}

impl WithSimd for Activate<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) {
        match self.activation {
            Activation::Gelu => {
                for v in self.x.iter_mut() {
                    *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
                }
            }
            Activation::GeluTanh => {
                for v in self.x.iter_mut() {
                    let inner = 0.797_884_6 * (*v + 0.044_715 * *v * *v * *v);
                    *v = 0.5 * *v * (1.0 + inner.tanh());
                }
            }
            Activation::Relu => self.x.iter_mut().for_each(|v| *v = v.max(0.0)),
        }
    }
}

/// erf(z) / z as a series in z² (Taylor), highest power first.
const ERF_SERIES: [f32; 11] = [
    1.480_719_3e-8,
    -1.636_584_5e-7,
    1.646_211_4e-6,
    -1.492_565e-5,
    1.205_533_3e-4,
    -8.548_327e-4,
    0.005_223_978,
    -0.026_866_17,
    0.112_837_92,
    -0.376_126_4,
    std::f32::consts::FRAC_2_SQRT_PI,
];

/// Abramowitz and Stegun 7.1.26's polynomial in t, divided by t, highest power first.
const ERF_FAR: [f32; 5] = [
    1.061_405_4,
    -1.453_152_1,
    1.421_413_7,
    -0.284_496_74,
    0.254_829_6,
];

/// The polynomial with `coefficients` (highest power first) at `x`, by Horner's rule: the
/// operations of the nested form written out (which `rustfmt` takes minutes to lay out), in the
/// same order, after one `0 · x` that changes no finite result. Unrolled by the compiler (the
/// arrays are constants).
#[inline(always)]
fn horner(x: f32, coefficients: &[f32]) -> f32 {
    coefficients.iter().fold(0.0, |sum, &c| sum * x + c)
}

/// The error function, within 2e-7 of the true value: its Taylor series below 1, Abramowitz
/// and Stegun's 7.1.26 (a rational fit within 1.5e-7, over an exponential of our own) above.
/// No library call and a select for a branch, so that a loop of it vectorises.
#[inline(always)]
fn erf(x: f32) -> f32 {
    let z = x.abs();
    let z2 = z * z;
    let near = z * horner(z2, &ERF_SERIES);
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t * horner(t, &ERF_FAR);
    let far = 1.0 - poly * exp(-z2);
    let value = if z < 1.0 { near } else { far };
    value.copysign(x)
}

/// eˣ within 2 units in the last place for x in -87..=0, the range `erf` needs (below, it
/// gives e⁻⁸⁷, not less): 2ⁿ · eʳ with r in ±ln2/2, eʳ by Cephes' polynomial. n is rounded by
/// adding 1.5 · 2²³ (which leaves it in the low bits), not by a float-to-integer conversion,
/// which would keep the loop from vectorising.
#[inline(always)]
fn exp(x: f32) -> f32 {
    const LN2_HIGH: f32 = 0.693_359_4;
    const LN2_LOW: f32 = -2.121_944_4e-4;
    const ROUNDER: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * std::f32::consts::LOG2_E + ROUNDER;
    let n = shifted - ROUNDER;
    let r = x - n * LN2_HIGH - n * LN2_LOW;
    let poly = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2)
        * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let value = poly * r * r + r + 1.0;
    // n is in -126..=127 after the clamp: a normal power of two.
    let exponent = shifted
        .to_bits()
        .wrapping_sub(ROUNDER.to_bits())
        .wrapping_add(127);
    value * f32::from_bits(exponent << 23)
}

/// One text's multi-head self-attention: `qkv` holds each token's query, key and value
/// (`3 × hidden` per token, heads side by side in each), `out` each token's context
/// (`hidden` per token). Compiled in the SIMD context `isa.rs` chose.
pub(crate) fn attention(qkv: &[f32], hidden: usize, heads: usize, out: &mut [f32]) {
    dispatch(Attention {
        qkv,
        hidden,
        heads,
        out,
    });
}

struct Attention<'a> {
    qkv: &'a [f32],
    hidden: usize,
    heads: usize,
    out: &'a mut [f32],
}

/// Queries whose scores are computed together: each key vector read serves them all, and
/// their sums are independent chains of multiply-adds.
const QUERIES: usize = 4;

impl WithSimd for Attention<'_> {
    type Output = ();

    /// Head by head: the head's keys laid out dimension by dimension (each row padded to whole
    /// vectors), so that the scores of [`QUERIES`] queries against a vector of keys grow
    /// together one dimension at a time in registers (the lanes run over keys: no horizontal
    /// sums); then each query's softmax, then the values weighed into its context (the lanes
    /// run over the head's dimensions).
    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Attention {
            qkv,
            hidden,
            heads,
            out,
        } = self;
        let tokens = out.len() / hidden.max(1);
        let size = hidden / heads.max(1);
        if tokens == 0 || size == 0 {
            return;
        }
        let scale = 1.0 / (size as f32).sqrt();
        let lanes = size_of::<S::f32s>() / size_of::<f32>();
        let stride = tokens.next_multiple_of(lanes);
        let mut keys = vec![0f32; size * stride];
        let mut scores = vec![0f32; QUERIES * stride];
        for head in 0..heads {
            let row = |token: usize, part: usize| {
                let at = token * 3 * hidden + part * hidden + head * size;
                &qkv[at..at + size]
            };
            for token in 0..tokens {
                for (dimension, value) in row(token, 1).iter().enumerate() {
                    keys[dimension * stride + token] = *value;
                }
            }
            for first in (0..tokens).step_by(QUERIES) {
                // A block short of queries repeats its last; only the block's own are written.
                let block: [usize; QUERIES] = std::array::from_fn(|i| (first + i).min(tokens - 1));
                let queries = block.map(|token| row(token, 0));
                score(simd, &queries, &keys, stride, &mut scores);
                for (scores, token) in scores.chunks_exact_mut(stride).zip(first..tokens) {
                    let scores = &mut scores[..tokens];
                    softmax(scores, scale);
                    let context = &mut out[token * hidden + head * size..][..size];
                    context.fill(0.0);
                    for (other, weight) in scores.iter().enumerate() {
                        weigh(simd, *weight, row(other, 2), context);
                    }
                }
            }
        }
    }
}

/// `scores[q * stride + key]` = `queries[q]` · the key (`keys[dimension * stride + key]`).
#[inline(always)]
fn score<S: Simd>(
    simd: S,
    queries: &[&[f32]; QUERIES],
    keys: &[f32],
    stride: usize,
    scores: &mut [f32],
) {
    let (keys, _) = S::as_simd_f32s(keys);
    let (scores, _) = S::as_mut_simd_f32s(scores);
    let vectors = scores.len() / QUERIES;
    let size = queries[0].len();
    debug_assert_eq!(keys.len(), size * vectors);
    debug_assert_eq!(vectors * (size_of::<S::f32s>() / size_of::<f32>()), stride);
    for column in 0..vectors {
        let mut sums = [simd.splat_f32s(0.0); QUERIES];
        for (dimension, key) in keys.iter().skip(column).step_by(vectors).enumerate() {
            for (sum, query) in sums.iter_mut().zip(queries) {
                *sum = simd.mul_add_e_f32s(simd.splat_f32s(query[dimension]), *key, *sum);
            }
        }
        for (q, sum) in sums.into_iter().enumerate() {
            scores[q * vectors + column] = sum;
        }
    }
}

/// `context` += `weight` × `value`.
#[inline(always)]
fn weigh<S: Simd>(simd: S, weight: f32, value: &[f32], context: &mut [f32]) {
    let (context, context_tail) = S::as_mut_simd_f32s(context);
    let (value, value_tail) = S::as_simd_f32s(value);
    let weight_lanes = simd.splat_f32s(weight);
    for (c, v) in context.iter_mut().zip(value) {
        *c = simd.mul_add_e_f32s(weight_lanes, *v, *c);
    }
    for (c, v) in context_tail.iter_mut().zip(value_tail) {
        *c += weight * v;
    }
}

/// Lanes of the softmax's running maximum and sum: a single running value cannot be reordered,
/// so it would not vectorise.
const LANES: usize = 16;

/// `x` scaled by `scale` (positive), then its softmax.
#[inline(always)]
fn softmax(x: &mut [f32], scale: f32) {
    let (chunks, tail) = x.as_chunks::<LANES>();
    let mut lanes = [f32::NEG_INFINITY; LANES];
    for chunk in chunks {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            *lane = lane.max(*v);
        }
    }
    let largest = lanes
        .into_iter()
        .chain(tail.iter().copied())
        .fold(f32::NEG_INFINITY, f32::max);
    for v in x.iter_mut() {
        *v = exp((*v - largest) * scale);
    }
    let (chunks, tail) = x.as_chunks::<LANES>();
    let mut lanes = [0f32; LANES];
    for chunk in chunks {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            *lane += v;
        }
    }
    let total: f32 = lanes.iter().chain(tail).sum();
    for v in x.iter_mut() {
        *v /= total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf by its Taylor series in f64 (exact to far below f32's precision for |x| ≤ 4).
    fn erf_series(x: f64) -> f64 {
        let (mut term, mut sum, mut n) = (x, x, 0.0);
        while term.abs() > 1e-17 * sum.abs().max(1e-300) {
            n += 1.0;
            term *= -x * x / n;
            sum += term / (2.0 * n + 1.0);
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn erf_is_within_float_precision_everywhere() {
        let mut largest = 0f64;
        for step in -4000..=4000 {
            let x = step as f32 / 1000.0;
            let error = (f64::from(erf(x)) - erf_series(f64::from(x))).abs();
            largest = largest.max(error);
        }
        assert!(largest < 2e-7, "largest error {largest}");
        for x in [4.5f32, 9.0, 100.0, f32::MAX] {
            assert!(
                (erf(x) - 1.0).abs() < 2e-7 && (erf(-x) + 1.0).abs() < 2e-7,
                "{x}"
            );
        }
    }

    #[test]
    fn exp_is_within_two_units_in_the_last_place() {
        for step in 0..=87_000 {
            let x = -(step as f32) / 1000.0;
            let (ours, exact) = (f64::from(exp(x)), f64::from(x).exp());
            assert!(
                (ours - exact).abs() <= 2.0 * f64::from(f32::EPSILON) * exact,
                "exp({x}) = {ours}, not {exact}"
            );
        }
    }

    #[test]
    fn attention_weighs_the_values_by_the_softmax_of_scaled_dot_products() {
        // Two tokens, one head of 9 (a tail past the eight lanes): token 0's query matches
        // token 1's key only.
        let (hidden, tokens) = (9, 2);
        let mut qkv = vec![0f32; tokens * 3 * hidden];
        qkv[0] = 3.0; // token 0 query
        qkv[3 * hidden + hidden] = 1.0; // token 1 key
        for i in 0..hidden {
            qkv[2 * hidden + i] = 1.0; // token 0 value: ones
            qkv[3 * hidden + 2 * hidden + i] = i as f32; // token 1 value: 0..9
        }
        let mut out = vec![0f32; tokens * hidden];
        attention(&qkv, hidden, 1, &mut out);
        let score: f32 = 3.0 / 3.0; // q·k / √9
        let to_second = score.exp() / (score.exp() + 1.0);
        for i in 0..hidden {
            let expected = (1.0 - to_second) + to_second * i as f32;
            assert!((out[i] - expected).abs() < 1e-6, "{} vs {expected}", out[i]);
            let even = (1.0 + i as f32) / 2.0; // token 1's query is 0: equal weights
            assert!((out[hidden + i] - even).abs() < 1e-6, "{}", out[hidden + i]);
        }
    }

    /// One text's attention in f64, as written in the paper: for each head and token, the
    /// softmax of the scaled dot products with every key weighs the values.
    fn attention_in_f64(qkv: &[f32], hidden: usize, heads: usize) -> Vec<f64> {
        let tokens = qkv.len() / (3 * hidden);
        let size = hidden / heads;
        let at = |token: usize, part: usize, head: usize, d: usize| {
            f64::from(qkv[token * 3 * hidden + part * hidden + head * size + d])
        };
        let mut out = vec![0f64; tokens * hidden];
        for head in 0..heads {
            for token in 0..tokens {
                let scores: Vec<f64> = (0..tokens)
                    .map(|other| {
                        let dot: f64 = (0..size)
                            .map(|d| at(token, 0, head, d) * at(other, 1, head, d))
                            .sum();
                        dot / (size as f64).sqrt()
                    })
                    .collect();
                let largest = scores.iter().cloned().fold(f64::MIN, f64::max);
                let weights: Vec<f64> = scores.iter().map(|s| (s - largest).exp()).collect();
                let total: f64 = weights.iter().sum();
                for d in 0..size {
                    out[token * hidden + head * size + d] = (0..tokens)
                        .map(|other| weights[other] / total * at(other, 2, head, d))
                        .sum();
                }
            }
        }
        out
    }

    /// Every SIMD context the CPU has gives the attention of the f64 form, at head sizes and
    /// token counts that are and are not multiples of its lanes or of the four queries scored
    /// together; every token's context is written (the output starts as NaN).
    #[test]
    fn attention_matches_its_f64_form_in_every_simd_context() {
        fn check<S: Simd>(simd: S, qkv: &[f32], hidden: usize, heads: usize, expected: &[f64]) {
            let mut out = vec![f32::NAN; expected.len()];
            let work = Attention {
                qkv,
                hidden,
                heads,
                out: &mut out,
            };
            simd.vectorize(work);
            for (ours, exact) in out.iter().zip(expected) {
                let error = (f64::from(*ours) - exact).abs();
                assert!(
                    error < 1e-5,
                    "{simd:?}: {ours} vs {exact} ({hidden}/{heads})"
                );
            }
        }
        for (heads, size) in [(1, 1), (2, 5), (3, 16), (1, 20), (2, 32)] {
            for tokens in [1, 3, 4, 5, 17, 33] {
                let hidden = heads * size;
                let qkv: Vec<f32> = (0..tokens * 3 * hidden)
                    .map(|i| ((i * 7919 % 1000) as f32 / 250.0) - 2.0)
                    .collect();
                let expected = attention_in_f64(&qkv, hidden, heads);
                check(pulp::Scalar::new(), &qkv, hidden, heads, &expected);
                #[cfg(target_arch = "x86_64")]
                {
                    if let Some(simd) = pulp::x86::V3::try_new() {
                        check(simd, &qkv, hidden, heads, &expected);
                    }
                    if let Some(simd) = pulp::x86::V4::try_new() {
                        check(simd, &qkv, hidden, heads, &expected);
                    }
                }
            }
        }
    }

    #[test]
    fn gelu_is_the_error_function_form() {
        let mut x: Vec<f32> = (-60..=60).map(|i| i as f32 / 10.0).collect();
        let expected: Vec<f64> = x
            .iter()
            .map(|v| {
                let v = f64::from(*v);
                0.5 * v * (1.0 + erf_series(v / std::f64::consts::SQRT_2))
            })
            .collect();
        activate(&mut x, Activation::Gelu);
        for (ours, exact) in x.iter().zip(expected) {
            assert!((f64::from(*ours) - exact).abs() < 1e-6, "{ours} vs {exact}");
        }
    }
}
