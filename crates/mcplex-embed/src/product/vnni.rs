//! The int8 product with AVX-512 VNNI, where the CPU has it: each tile of [`TOKENS`] tokens has
//! its inputs quantized to int8 steps (once per product, before its panels are shared out
//! between threads; a last tile of few tokens is computed as 4 or 8), and each `vpdpbusd`
//! sums four inputs' products into
//! sixteen outputs' int32 lanes at once: four times the multiply-adds per instruction of the
//! f32 tile, and the weights are read as they are kept. About twice as fast as the f32 tile on
//! a long request (the instruction's port is the f32 multiply-adds' too).
//!
//! - **Steps.** Each group of [`GROUP`] quads (64 inputs) of a token has its own range, low to
//!   high, in 256 steps (`x ≈ low + scale × (q + 128)`, `q` in -128..=127): each input moves by
//!   at most half a step, and an outlying input (BERT's few large dimensions) coarsens only its
//!   own group. A group's int32 sums are scaled into f32 totals as it ends, with `low + 128 ×
//!   scale` times
//!   the group's sum of weights.
//! - **Signs.** The instruction multiplies unsigned bytes by signed ones: the weights are kept
//!   as `w + 128` so that the tokens' steps, signed, are broadcast straight from memory, and
//!   `128 × Σq` is taken off each group's sums in int32.
//! - **What it costs.** The vectors move by less than 0.1% (cosine) from those of f32 inputs
//!   (the model's tests keep them within 0.2%), and the products' tests bound each output's
//!   error by half a step per input.
//!
//! Owns: the detection of the instructions, the layout of the weights they read, and the only
//! `unsafe` of this crate: calling the functions compiled for those instructions, which
//! [`Vnni`] (made only where the CPU has them) makes sound.

use std::arch::x86_64::{
    __m512, __m512i, _MM_FROUND_NO_EXC, _MM_FROUND_TO_NEAREST_INT, _mm512_cvt_roundps_epi32,
    _mm512_cvtepi32_epi8, _mm512_cvtepi32_ps, _mm512_dpbusd_epi32, _mm512_fmadd_ps,
    _mm512_max_epi32, _mm512_max_ps, _mm512_min_epi32, _mm512_min_ps, _mm512_mul_ps,
    _mm512_reduce_add_epi32, _mm512_reduce_max_ps, _mm512_reduce_min_ps, _mm512_set1_epi32,
    _mm512_set1_ps, _mm512_setzero_ps, _mm512_setzero_si512, _mm512_sub_epi32, _mm512_sub_ps,
};

use std::ops::Range;

use super::{Columns, Dense, PANEL, finish};

/// Tokens per tile: their int32 sums of a group, their f32 totals and the weights take 26 of
/// the 32 registers.
const TOKENS: usize = 12;
/// Inputs summed by one lane of one instruction.
const QUAD: usize = 4;
/// Quads of inputs quantized with one scale per token: 64 inputs. A few inputs of a hidden
/// state are far larger than the rest (BERT's outlier dimensions); one scale for a whole row
/// would give the others a handful of steps, one per group spends the coarse steps on the
/// groups that hold them. Each group's sums are scaled into f32 totals as it ends.
const GROUP: usize = 16;

/// Proof that this CPU runs AVX-512 (F, BW, VL) and its VNNI instructions: only
/// [`Vnni::detect`] makes one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vnni(());

impl Vnni {
    pub fn detect() -> Option<Vnni> {
        let has = std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512vnni");
        has.then_some(Vnni(()))
    }
}

/// A layer's int8 weights laid out for VNNI: panel after panel, group after group, quad after
/// quad; with each group's sum of weights per output, which the tokens' bases multiply.
#[derive(Debug)]
pub(super) struct Quads {
    vnni: Vnni,
    quads: Vec<Quad>,
    sums: Vec<[f32; PANEL]>,
}

/// Four consecutive inputs' weights of a panel's sixteen outputs, each as `w + 128`: output
/// `j`'s four at bytes `4j..4j + 4`.
#[derive(Debug, Clone, Copy)]
struct Quad([u8; PANEL * QUAD]);

/// Groups of a row of `inputs`.
fn groups(inputs: usize) -> usize {
    inputs.div_ceil(QUAD * GROUP)
}

/// The tokens a tile of `tokens` is computed as: a short query's last tile needs no twelve.
fn width(tokens: usize) -> usize {
    match tokens {
        0..=4 => 4,
        5..=8 => 8,
        _ => TOKENS,
    }
}

impl Quads {
    /// `values` (rows of `inputs`, int8) as `panels` panels; the last panel's missing outputs
    /// and the inputs past the last whole group have weight 0 (stored 128).
    pub fn new(vnni: Vnni, values: &[i8], inputs: usize, panels: usize) -> Quads {
        let groups = groups(inputs);
        let per_panel = groups * GROUP;
        let mut quads = vec![Quad([128; PANEL * QUAD]); panels * per_panel];
        let mut sums = vec![[0f32; PANEL]; panels * groups];
        for (output, row) in values.chunks_exact(inputs).enumerate() {
            let (panel, lane) = (output / PANEL, output % PANEL);
            for (input, weight) in row.iter().enumerate() {
                let quad = &mut quads[panel * per_panel + input / QUAD];
                quad.0[lane * QUAD + input % QUAD] = weight.to_le_bytes()[0] ^ 0x80;
                sums[panel * groups + input / (QUAD * GROUP)][lane] += f32::from(*weight);
            }
        }
        Quads { vnni, quads, sums }
    }

    /// `rows` (of `inputs` each) quantized, a tile of at most [`TOKENS`] at a time: once for
    /// every panel, and for both threads of a split product.
    #[allow(unsafe_code)]
    pub fn quantize(&self, inputs: usize, rows: &[&[f32]]) -> Vec<Quantized> {
        // SAFETY: `self.vnni` exists only where `Vnni::detect` found every feature `quantize`
        // is compiled for.
        unsafe { quantize(self.vnni, inputs, rows) }
    }

    /// The outputs of `layer`'s panels `range` for the quantized `tiles`, written from column 0
    /// of `out` (a row per token).
    #[allow(unsafe_code)]
    pub fn run(
        &self,
        layer: &Dense,
        tiles: &[Quantized],
        range: Range<usize>,
        out: &mut [&mut [f32]],
    ) {
        // SAFETY: as for `quantize`.
        unsafe { run(self.vnni, self, layer, tiles, range, out) }
    }
}

/// A tile's tokens quantized, group by group: each token's inputs as steps `q` in -128..=127
/// standing for `low + scale × (q + 128)`, each quad of steps the four bytes of one `i32`,
/// quad after quad (`x[quad][token]`). The slots past its tokens, up to its [`width`], are
/// zeros.
pub(super) struct Quantized {
    tokens: usize,
    x: Vec<[i32; TOKENS]>,
    /// Per group and token.
    scales: Vec<[f32; TOKENS]>,
    /// Per group and token: `low + 128 × scale`, what a weight adds for its input's offset.
    bases: Vec<[f32; TOKENS]>,
    /// Per group and token: `128 × Σq`, what the unsigned weights' `+ 128` added to the sums
    /// (taken off in int32: in f32 it would be a large number less another).
    excess: Vec<[i32; TOKENS]>,
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
fn quantize(_proof: Vnni, inputs: usize, rows: &[&[f32]]) -> Vec<Quantized> {
    let groups = groups(inputs);
    rows.chunks(TOKENS)
        .map(|rows| {
            let mut tile = Quantized {
                tokens: rows.len(),
                x: vec![[0; TOKENS]; groups * GROUP],
                scales: vec![[0.0; TOKENS]; groups],
                bases: vec![[0.0; TOKENS]; groups],
                excess: vec![[0; TOKENS]; groups],
            };
            fill(&mut tile, rows);
            tile
        })
        .collect()
}

/// `rows` (at most [`TOKENS`]) quantized into `tile`. The inputs past a row's end (in its last
/// group) are quantized as copies of the group's first value, so that they leave its range as
/// it is, and a row the tile lacks (up to its width) as zeros: their weights are 0, and their
/// steps are counted in the excess as their products are in the sums, so they cancel.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[inline]
fn fill(tile: &mut Quantized, rows: &[&[f32]]) {
    const INPUTS: usize = GROUP * QUAD;
    for token in 0..width(rows.len()) {
        let row = rows.get(token).copied().unwrap_or(&[]);
        for (group, quads) in tile.x.chunks_exact_mut(GROUP).enumerate() {
            let start = (group * INPUTS).min(row.len());
            let values = &row[start..(start + INPUTS).min(row.len())];
            let mut padded = [values.first().copied().unwrap_or(0.0); INPUTS];
            padded[..values.len()].copy_from_slice(values);
            let vectors: [__m512; INPUTS / 16] = pulp::cast(padded);
            let (mut low, mut high) = (vectors[0], vectors[0]);
            for vector in &vectors[1..] {
                low = _mm512_min_ps(low, *vector);
                high = _mm512_max_ps(high, *vector);
            }
            let (low, high) = (_mm512_reduce_min_ps(low), _mm512_reduce_max_ps(high));
            let (scale, inverse) = if high > low {
                ((high - low) / 255.0, 255.0 / (high - low))
            } else {
                (0.0, 0.0)
            };
            let mut steps_sum = 0i32;
            for (vector, quads) in vectors.iter().zip(quads.chunks_exact_mut(4)) {
                let up = _mm512_mul_ps(
                    _mm512_sub_ps(*vector, _mm512_set1_ps(low)),
                    _mm512_set1_ps(inverse),
                );
                let up = _mm512_min_epi32(
                    _mm512_max_epi32(nearest(up), _mm512_set1_epi32(0)),
                    _mm512_set1_epi32(255),
                );
                let steps = _mm512_sub_epi32(up, _mm512_set1_epi32(128));
                steps_sum += _mm512_reduce_add_epi32(steps);
                let bytes: [i32; 4] = pulp::cast(_mm512_cvtepi32_epi8(steps));
                for (slot, word) in quads.iter_mut().zip(bytes) {
                    slot[token] = word;
                }
            }
            tile.scales[group][token] = scale;
            tile.bases[group][token] = low + 128.0 * scale;
            tile.excess[group][token] = 128 * steps_sum;
        }
    }
}

/// `x` rounded to the nearest integer, ties to even, whatever the rounding mode the thread
/// has set.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[inline]
fn nearest(x: __m512) -> __m512i {
    _mm512_cvt_roundps_epi32::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x)
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
fn run(
    _proof: Vnni,
    weights: &Quads,
    layer: &Dense,
    tiles: &[Quantized],
    range: Range<usize>,
    out: &mut [&mut [f32]],
) {
    let first = range.start;
    let groups = groups(layer.inputs);
    for (tile, outs) in tiles.iter().zip(out.chunks_mut(TOKENS)) {
        for panel in range.clone() {
            let quads = &weights.quads[panel * groups * GROUP..(panel + 1) * groups * GROUP];
            let sums = &weights.sums[panel * groups..(panel + 1) * groups];
            let at = Columns {
                layer,
                panel,
                columns: (panel - first) * PANEL..(panel - first + 1) * PANEL,
            };
            match width(tile.tokens) {
                4 => finish(&dot::<4>(quads, sums, tile), outs, &at),
                8 => finish(&dot::<8>(quads, sums, tile), outs, &at),
                _ => finish(&dot::<TOKENS>(quads, sums, tile), outs, &at),
            }
        }
    }
}

/// The first `T` tokens of the tile with one panel's weights, group by group: the int32 sums
/// of a group, less their excess, scaled into the f32 totals, `totals[token][lane]`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[inline]
fn dot<const T: usize>(
    quads: &[Quad],
    weight_sums: &[[f32; PANEL]],
    tile: &Quantized,
) -> [[f32; PANEL]; T] {
    let mut totals = [_mm512_setzero_ps(); T];
    let groups = quads.chunks_exact(GROUP).zip(tile.x.chunks_exact(GROUP));
    for (group, (quads, values)) in groups.enumerate() {
        let mut sums = [_mm512_setzero_si512(); T];
        for (weights, values) in quads.iter().zip(values) {
            let weights: __m512i = pulp::cast(weights.0);
            for (sum, value) in sums.iter_mut().zip(values) {
                *sum = _mm512_dpbusd_epi32(*sum, weights, _mm512_set1_epi32(*value));
            }
        }
        let weight_sums: __m512 = pulp::cast(weight_sums[group]);
        let (scales, bases) = (&tile.scales[group], &tile.bases[group]);
        let excess = &tile.excess[group];
        for (token, (total, sum)) in totals.iter_mut().zip(sums).enumerate() {
            let sum = _mm512_sub_epi32(sum, _mm512_set1_epi32(excess[token]));
            let scaled = _mm512_fmadd_ps(
                _mm512_cvtepi32_ps(sum),
                _mm512_set1_ps(scales[token]),
                *total,
            );
            *total = _mm512_fmadd_ps(weight_sums, _mm512_set1_ps(bases[token]), scaled);
        }
    }
    totals.map(pulp::cast)
}
