//! The arithmetic of the forward pass, on plain row-major `f32` slices: the dense layers'
//! products, layer normalisation, GELU, and one text's attention. The products run on the best
//! SIMD the CPU has (AVX2 + FMA where present, chosen at run time by `pulp`), in register tiles of
//! a few tokens × a few output rows, and over two threads when the product is large enough and
//! the caller's pool has them.
//!
//! Owns: the numbers. Must not: know the model's shape or its weights' names (`bert.rs`).

use pulp::{Arch, Simd, WithSimd};

/// Tokens per register tile of a product.
const TILE_TOKENS: usize = 4;
/// Weight rows (outputs) per register tile of a product.
const TILE_OUTPUTS: usize = 3;
/// Tokens per cache block: their inputs stay in the core's cache while every weight row passes.
const BLOCK_TOKENS: usize = 32;
/// Multiply-adds below which a product stays on one thread (waking a second costs more).
const PARALLEL_WORK: usize = 1 << 20;

/// A dense layer: `outputs` rows of `inputs` weights (PyTorch's layout) and a bias per output.
#[derive(Debug)]
pub(crate) struct Dense {
    pub inputs: usize,
    pub outputs: usize,
    pub weights: Matrix,
    pub bias: Vec<f32>,
}

/// A dense layer's weights, row after row.
#[derive(Debug)]
pub(crate) enum Matrix {
    F32(Vec<f32>),
    /// int8 with a scale per row, kept so in memory (a quarter of the f32 bytes to stream per
    /// product) and turned into the same f32 values a few rows at a time as a product reads them.
    Int8 {
        values: Vec<i8>,
        scales: Vec<f32>,
    },
}

impl Matrix {
    /// The f32 values of the whole matrix (`columns` per row).
    pub fn into_f32(self, columns: usize) -> Vec<f32> {
        match self {
            Matrix::F32(values) => values,
            Matrix::Int8 { values, scales } => {
                let mut out = vec![0f32; values.len()];
                let rows = out.chunks_exact_mut(columns.max(1));
                for ((row, quantized), scale) in
                    rows.zip(values.chunks_exact(columns.max(1))).zip(&scales)
                {
                    dequantize_into(quantized, *scale, row);
                }
                out
            }
        }
    }

    /// Rows `first..first + count` (`columns` each) as f32, in `scratch` when they need converting.
    #[inline(always)]
    fn rows<'a>(
        &'a self,
        first: usize,
        count: usize,
        columns: usize,
        scratch: &'a mut [f32],
    ) -> &'a [f32] {
        let (start, end) = (first * columns, (first + count) * columns);
        match self {
            Matrix::F32(values) => &values[start..end],
            Matrix::Int8 { values, scales } => {
                let rows = scratch
                    .chunks_exact_mut(columns)
                    .zip(values[start..end].chunks_exact(columns));
                for ((row, quantized), scale) in rows.zip(&scales[first..first + count]) {
                    dequantize_into(quantized, *scale, row);
                }
                &scratch[..end - start]
            }
        }
    }
}

/// `f32::from(q) * scale` for each `q`: the values the compact form's f32 reading gives.
#[inline(always)]
fn dequantize_into(quantized: &[i8], scale: f32, out: &mut [f32]) {
    for (o, q) in out.iter_mut().zip(quantized) {
        *o = f32::from(*q) * scale;
    }
}

/// `out` (tokens × `outputs`) = `x` (tokens × `inputs`) · weightsᵀ + bias. Splits the outputs
/// over two threads of the current rayon pool when it has them and the product is large.
pub(crate) fn dense(layer: &Dense, x: &[f32], out: &mut [f32]) {
    let tokens = x.len() / layer.inputs.max(1);
    let work = tokens * layer.inputs * layer.outputs;
    let mut rows: Vec<&mut [f32]> = out.chunks_exact_mut(layer.outputs).collect();
    if work < PARALLEL_WORK || rayon::current_num_threads() < 2 {
        dense_range(layer, x, 0, &mut rows);
        return;
    }
    let half = (layer.outputs / 2)
        .next_multiple_of(TILE_OUTPUTS)
        .min(layer.outputs);
    let (mut left, mut right): (Vec<&mut [f32]>, Vec<&mut [f32]>) =
        rows.into_iter().map(|row| row.split_at_mut(half)).unzip();
    rayon::join(
        || dense_range(layer, x, 0, &mut left),
        || dense_range(layer, x, half, &mut right),
    );
}

/// Outputs `first..first + out[i].len()` of every token `i`.
fn dense_range(layer: &Dense, x: &[f32], first: usize, out: &mut [&mut [f32]]) {
    Arch::new().dispatch(DenseRange {
        layer,
        x,
        first,
        out,
    });
}

struct DenseRange<'a, 'b> {
    layer: &'a Dense,
    x: &'a [f32],
    first: usize,
    out: &'a mut [&'b mut [f32]],
}

impl WithSimd for DenseRange<'_, '_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let DenseRange {
            layer,
            x,
            first,
            out,
        } = self;
        let k = layer.inputs;
        let count = out.first().map_or(0, |row| row.len());
        let inputs: Vec<&[f32]> = x.chunks_exact(k).collect();
        let mut scratch = vec![0f32; TILE_OUTPUTS * k];
        for (block, block_out) in inputs
            .chunks(BLOCK_TOKENS)
            .zip(out.chunks_mut(BLOCK_TOKENS))
        {
            let mut output = 0;
            while output < count {
                let width = TILE_OUTPUTS.min(count - output);
                let tile = layer.weights.rows(first + output, width, k, &mut scratch);
                let row = |c: usize| &tile[c * k..(c + 1) * k];
                if width == TILE_OUTPUTS {
                    let weights: [&[f32]; TILE_OUTPUTS] = std::array::from_fn(row);
                    tile_outputs(simd, block, weights, block_out, output);
                } else {
                    for c in 0..width {
                        tile_outputs(simd, block, [row(c)], block_out, output + c);
                    }
                }
                output += width;
            }
        }
        for row in out.iter_mut() {
            for (value, bias) in row.iter_mut().zip(&layer.bias[first..]) {
                *value += bias;
            }
        }
    }
}

/// Every token of `block` against the `C` weight rows `weights`, written at column `output`.
#[inline(always)]
fn tile_outputs<S: Simd, const C: usize>(
    simd: S,
    block: &[&[f32]],
    weights: [&[f32]; C],
    out: &mut [&mut [f32]],
    output: usize,
) {
    let mut token = 0;
    while token + TILE_TOKENS <= block.len() {
        let xs: [&[f32]; TILE_TOKENS] = std::array::from_fn(|r| block[token + r]);
        let sums = dots(simd, xs, weights);
        for (r, sums) in sums.iter().enumerate() {
            out[token + r][output..output + C].copy_from_slice(sums);
        }
        token += TILE_TOKENS;
    }
    while token < block.len() {
        let [sums] = dots(simd, [block[token]], weights);
        out[token][output..output + C].copy_from_slice(&sums);
        token += 1;
    }
}

/// The `R` × `C` dot products of `xs` with `weights` (all of one length), each in SIMD lanes
/// summed at the end.
#[inline(always)]
fn dots<S: Simd, const R: usize, const C: usize>(
    simd: S,
    xs: [&[f32]; R],
    weights: [&[f32]; C],
) -> [[f32; C]; R] {
    let xs = xs.map(S::as_simd_f32s);
    let weights = weights.map(S::as_simd_f32s);
    let steps = weights.first().map_or(0, |w| w.0.len());
    let x_heads = xs.map(|x| &x.0[..steps]);
    let w_heads = weights.map(|w| &w.0[..steps]);
    let mut sums = [[simd.splat_f32s(0.0); C]; R];
    for step in 0..steps {
        let w: [S::f32s; C] = std::array::from_fn(|c| w_heads[c][step]);
        for r in 0..R {
            let x = x_heads[r][step];
            for c in 0..C {
                sums[r][c] = simd.mul_add_e_f32s(x, w[c], sums[r][c]);
            }
        }
    }
    std::array::from_fn(|r| {
        std::array::from_fn(|c| {
            let tail: f32 = xs[r].1.iter().zip(weights[c].1).map(|(x, w)| x * w).sum();
            simd.reduce_sum_f32s(sums[r][c]) + tail
        })
    })
}

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
    match activation {
        Activation::Gelu => x
            .iter_mut()
            .for_each(|v| *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2))),
        Activation::GeluTanh => x.iter_mut().for_each(|v| {
            let inner = 0.797_884_6 * (*v + 0.044_715 * *v * *v * *v);
            *v = 0.5 * *v * (1.0 + inner.tanh());
        }),
        Activation::Relu => x.iter_mut().for_each(|v| *v = v.max(0.0)),
    }
}

/// The error function, within 1.2e-7 of the true value (W. J. Cody's rational approximations,
/// as in Numerical Recipes' `erfc` via its Chebyshev fit).
fn erf(x: f32) -> f32 {
    let z = f64::from(x.abs());
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    let value = (1.0 - erfc) as f32;
    if x < 0.0 { -value } else { value }
}

/// One text's multi-head self-attention: `qkv` holds each token's query, key and value
/// (`3 × hidden` per token, heads side by side in each), `out` each token's context
/// (`hidden` per token).
pub(crate) fn attention(qkv: &[f32], hidden: usize, heads: usize, out: &mut [f32]) {
    let tokens = out.len() / hidden.max(1);
    let size = hidden / heads.max(1);
    let scale = 1.0 / (size as f32).sqrt();
    let row = |token: usize, part: usize, head: usize| {
        let at = token * 3 * hidden + part * hidden + head * size;
        &qkv[at..at + size]
    };
    let mut weights = vec![0f32; tokens];
    for head in 0..heads {
        for token in 0..tokens {
            let query = row(token, 0, head);
            for (other, weight) in weights.iter_mut().enumerate() {
                let key = row(other, 1, head);
                *weight = query.iter().zip(key).map(|(q, k)| q * k).sum::<f32>() * scale;
            }
            softmax(&mut weights);
            let context = &mut out[token * hidden + head * size..][..size];
            context.fill(0.0);
            for (other, weight) in weights.iter().enumerate() {
                for (c, v) in context.iter_mut().zip(row(other, 2, head)) {
                    *c += weight * v;
                }
            }
        }
    }
}

fn softmax(x: &mut [f32]) {
    let largest = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut total = 0.0;
    for v in x.iter_mut() {
        *v = (*v - largest).exp();
        total += *v;
    }
    for v in x.iter_mut() {
        *v /= total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(layer: &Dense, x: &[f32]) -> Vec<f32> {
        x.chunks_exact(layer.inputs)
            .flat_map(|row| {
                let Matrix::F32(weights) = &layer.weights else {
                    panic!("the test's layers are f32")
                };
                weights
                    .chunks_exact(layer.inputs)
                    .zip(&layer.bias)
                    .map(|(w, b)| row.iter().zip(w).map(|(a, b)| a * b).sum::<f32>() + b)
            })
            .collect()
    }

    #[test]
    fn dense_products_match_the_plain_sum_at_every_shape() {
        // Odd sizes exercise every remainder: tokens, outputs and inputs not multiples of tiles.
        for (tokens, inputs, outputs) in [(1, 3, 1), (5, 19, 7), (37, 64, 10), (70, 384, 1153)] {
            let value = |i: usize| ((i * 7919 % 1000) as f32 / 500.0) - 1.0;
            let layer = Dense {
                inputs,
                outputs,
                weights: Matrix::F32((0..inputs * outputs).map(value).collect()),
                bias: (0..outputs).map(|i| value(i + 3)).collect(),
            };
            let x: Vec<f32> = (0..tokens * inputs).map(|i| value(i + 11)).collect();
            let mut out = vec![0f32; tokens * outputs];
            dense(&layer, &x, &mut out);
            for (ours, plain) in out.iter().zip(naive(&layer, &x)) {
                assert!(
                    (ours - plain).abs() <= 1e-4 * (1.0 + plain.abs()),
                    "{ours} vs {plain}"
                );
            }
        }
    }

    #[test]
    fn int8_rows_give_the_products_of_their_f32_values() {
        let (tokens, inputs, outputs) = (9, 40, 8);
        let values: Vec<i8> = (0..inputs * outputs)
            .map(|i| (i * 37 % 255) as u8 as i8)
            .collect();
        let scales: Vec<f32> = (0..outputs).map(|r| 0.01 * (r + 1) as f32).collect();
        let bias: Vec<f32> = (0..outputs).map(|r| r as f32 / 10.0).collect();
        let int8 = Dense {
            inputs,
            outputs,
            weights: Matrix::Int8 { values, scales },
            bias: bias.clone(),
        };
        let x: Vec<f32> = (0..tokens * inputs)
            .map(|i| (i % 13) as f32 / 7.0 - 0.9)
            .collect();
        let mut ours = vec![0f32; tokens * outputs];
        dense(&int8, &x, &mut ours);
        let f32_layer = Dense {
            inputs,
            outputs,
            weights: Matrix::F32(int8.weights.into_f32(inputs)),
            bias,
        };
        for (a, b) in ours.iter().zip(naive(&f32_layer, &x)) {
            assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()), "{a} vs {b}");
        }
    }

    #[test]
    fn erf_is_within_float_precision() {
        // Reference values of erf.
        for (x, expected) in [
            (0.0, 0.0),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-2.0, -0.995_322_3),
        ] {
            assert!((erf(x) - expected).abs() < 2e-7, "erf({x}) = {}", erf(x));
        }
    }
}
