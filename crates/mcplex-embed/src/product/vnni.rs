//! The int8 product with AVX-512 VNNI, where the CPU has it: each tile of [`TOKENS`] tokens has
//! its inputs quantized to int8 steps (once per product, before its panels are shared out
//! between threads; a last tile of few tokens is computed as 4 or 8), and each `vpdpbusd`
//! sums four inputs' products into
//! sixteen outputs' int32 lanes at once: four times the multiply-adds per instruction of the
//! f32 tile, and the weights are read as they are kept. About twice as fast as the f32 tile on
//! a long request (the instruction's port is the f32 multiply-adds' too).
//!
//! - **Steps.** Each group of 64 inputs of a token in 256 steps of its own range (`steps.rs`,
//!   as for the AVX2 integer product). A group's int32 sums are scaled into f32 totals as it
//!   ends, with `low + 128 × scale` times the group's sum of weights.
//! - **Signs.** The instruction multiplies unsigned bytes by signed ones: the weights are kept
//!   as `w + 128` so that the tokens' steps, signed, are broadcast straight from memory, and
//!   `128 × Σq` is taken off each group's sums in int32.
//! - **What it costs.** The vectors move by less than 0.1% (cosine) from those of f32 inputs
//!   (the model's tests keep them within 0.2%), and the products' tests bound each output's
//!   error by half a step per input.
//!
//! Owns: the proof that the CPU has these instructions ([`Vnni`], which `isa.rs` hands out),
//! the layout of the weights they read, and the only `unsafe` of this crate: calling the
//! function compiled for them, which a [`Vnni`] makes sound.

use std::arch::x86_64::{
    __m512, __m512i, _mm512_cvtepi32_ps, _mm512_dpbusd_epi32, _mm512_fmadd_ps, _mm512_set1_epi32,
    _mm512_set1_ps, _mm512_setzero_ps, _mm512_setzero_si512, _mm512_sub_epi32,
};

use std::ops::Range;

use pulp::x86::V4;

use super::steps::{GROUP_INPUTS, TileLayout, TileSteps, groups, quantize, weight_sums};
use super::{Columns, Dense, PANEL, finish};

/// Tokens per tile: their int32 sums of a group, their f32 totals and the weights take 26 of
/// the 32 registers.
const TOKENS: usize = 12;
/// Inputs summed by one lane of one instruction.
const QUAD: usize = 4;
/// Quads of a quantization group.
const GROUP: usize = GROUP_INPUTS / QUAD;

/// Proof that this CPU runs x86-64-v4 (AVX-512 F, BW, CD, DQ, VL) and AVX-512 VNNI: only
/// [`Vnni::detect`] makes one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vnni(V4);

impl Vnni {
    pub fn detect() -> Option<Vnni> {
        let v4 = V4::try_new()?;
        std::arch::is_x86_feature_detected!("avx512vnni").then_some(Vnni(v4))
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

impl Quads {
    /// `values` (rows of `inputs`, int8) as `panels` panels; the last panel's missing outputs
    /// and the inputs past the last whole group have weight 0 (stored 128).
    pub fn new(vnni: Vnni, values: &[i8], inputs: usize, panels: usize) -> Quads {
        let per_panel = groups(inputs) * GROUP;
        let mut quads = vec![Quad([128; PANEL * QUAD]); panels * per_panel];
        for (output, row) in values.chunks_exact(inputs).enumerate() {
            let (panel, lane) = (output / PANEL, output % PANEL);
            for (input, weight) in row.iter().enumerate() {
                let quad = &mut quads[panel * per_panel + input / QUAD];
                quad.0[lane * QUAD + input % QUAD] = weight.to_le_bytes()[0] ^ 0x80;
            }
        }
        let sums = weight_sums(values, inputs, panels);
        Quads { vnni, quads, sums }
    }

    /// `rows` (of `inputs` each) quantized, a tile of at most [`TOKENS`] at a time: once for
    /// every panel, and for both threads of a split product.
    pub fn quantize(&self, inputs: usize, rows: &[&[f32]]) -> Vec<Quantized> {
        quantize::<TOKENS, Quads4>(self.vnni.0, inputs, rows)
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
        // SAFETY: `self.vnni` exists only where `Vnni::detect` found every feature `run` is
        // compiled for.
        unsafe { run(self.vnni, self, layer, tiles, range, out) }
    }
}

/// A tile's tokens quantized (`steps.rs`), each quad of steps the four bytes of one `i32`.
pub(super) type Quantized = TileSteps<TOKENS>;

/// Four steps to a word, as the bytes of one `i32` in the order they lie in memory.
struct Quads4;

impl TileLayout for Quads4 {
    const WORDS: usize = GROUP;

    #[inline(always)]
    fn place<const T: usize>(steps: &[i8; GROUP_INPUTS], token: usize, slots: &mut [[i32; T]]) {
        let words: [i32; GROUP] = pulp::cast(*steps);
        for (slot, word) in slots.iter_mut().zip(words) {
            slot[token] = word;
        }
    }

    #[inline(always)]
    fn width(tokens: usize) -> usize {
        match tokens {
            0..=4 => 4,
            5..=8 => 8,
            _ => TOKENS,
        }
    }
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
            match Quads4::width(tile.tokens) {
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
    let groups = quads
        .chunks_exact(GROUP)
        .zip(tile.words.chunks_exact(GROUP));
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
        // What the unsigned weights' `+ 128` added to the sums, `128 × Σq`, taken off in
        // int32 (in f32 it would be a large number less another).
        let steps_sums = &tile.sums[group];
        for (token, (total, sum)) in totals.iter_mut().zip(sums).enumerate() {
            let sum = _mm512_sub_epi32(sum, _mm512_set1_epi32(128 * steps_sums[token]));
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
