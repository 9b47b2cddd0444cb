//! The int8 product with AVX2, where the CPU has no AVX-512 VNNI: the tokens' inputs are
//! quantized to the same int8 steps as for VNNI (`steps.rs`, once per product, before its panels
//! are shared out between threads), and each `vpmaddwd` multiplies two inputs' steps by eight
//! outputs' weights, both widened to int16, and sums each output's pair into an int32 lane:
//! sixteen multiply-adds per instruction against the f32 tile's eight, with no conversion of
//! the weights to f32. (`vpmaddubsw` would take the bytes as they are, but the sum of two
//! products of a weight and an 8-bit step overflows its int16 lane.)
//!
//! - **Layout.** A panel's weights pair after pair of inputs: the sixteen outputs' two weights
//!   side by side, eight outputs to a register once widened ([`Pair`]). Each group of 64 inputs
//!   (32 pairs) has its int32 sums scaled into f32 totals as it ends, with each token's base
//!   times the group's sum of weights (`x ≈ base + scale × q`).
//! - **Tile.** Six tokens: their twelve int32 sums, the panel row's two registers and a
//!   broadcast fill 15 of the 16 registers; a last tile of few tokens is computed as 2 or 4.
//!
//! Owns: the layout of the weights it reads, and its tile. Must not: quantize in any other way
//! than `steps.rs`.

use std::ops::Range;

use pulp::x86::V3;
use std::arch::x86_64::__m256i;

use pulp::f32x8;

use super::steps::{GROUP_INPUTS, TileLayout, TileSteps, groups, quantize, weight_sums};
use super::{Columns, Dense, PANEL, finish};

/// Tokens per tile.
const TOKENS: usize = 6;
/// Pairs of inputs in a quantization group.
const GROUP: usize = GROUP_INPUTS / 2;

/// A layer's int8 weights laid out pair by pair; with each group's sum of weights per output,
/// which the tokens' bases multiply. Made only with the proof that the CPU has AVX2.
#[derive(Debug)]
pub(super) struct Pairs {
    simd: V3,
    pairs: Vec<Pair>,
    sums: Vec<[f32; PANEL]>,
}

/// Two consecutive inputs' weights of a panel's sixteen outputs: output `j`'s two at bytes
/// `2j..2j + 2`, so that the first sixteen bytes widen to outputs 0–7 and the rest to 8–15.
#[derive(Debug, Clone, Copy)]
struct Pair([i8; 2 * PANEL]);

impl Pairs {
    /// `values` (rows of `inputs`, int8) as `panels` panels; the last panel's missing outputs
    /// and the inputs past the row's end have weight 0.
    pub fn new(simd: V3, values: &[i8], inputs: usize, panels: usize) -> Pairs {
        let per_panel = groups(inputs) * GROUP;
        let mut pairs = vec![Pair([0; 2 * PANEL]); panels * per_panel];
        for (output, row) in values.chunks_exact(inputs).enumerate() {
            let (panel, lane) = (output / PANEL, output % PANEL);
            for (input, weight) in row.iter().enumerate() {
                pairs[panel * per_panel + input / 2].0[lane * 2 + input % 2] = *weight;
            }
        }
        let sums = weight_sums(values, inputs, panels);
        Pairs { simd, pairs, sums }
    }

    /// `rows` (of `inputs` each) quantized, a tile of at most [`TOKENS`] at a time: once for
    /// every panel, and for both threads of a split product.
    pub fn quantize(&self, inputs: usize, rows: &[&[f32]]) -> Vec<Quantized> {
        quantize::<TOKENS, Pairs2>(self.simd, inputs, rows)
    }

    /// The outputs of `layer`'s panels `range` for the quantized `tiles`, written from column 0
    /// of `out` (a row per token).
    pub fn run(
        &self,
        layer: &Dense,
        tiles: &[Quantized],
        range: Range<usize>,
        out: &mut [&mut [f32]],
    ) {
        pulp::Simd::vectorize(
            self.simd,
            Run {
                weights: self,
                layer,
                tiles,
                range,
                out,
            },
        );
    }
}

/// A tile's tokens quantized (`steps.rs`), each pair of steps the two int16 halves of one `i32`.
pub(super) type Quantized = TileSteps<TOKENS>;

/// Two steps to a word, widened to int16: the first in the low half.
struct Pairs2;

impl TileLayout for Pairs2 {
    const WORDS: usize = GROUP;

    #[inline(always)]
    fn place<const T: usize>(steps: &[i8; GROUP_INPUTS], token: usize, slots: &mut [[i32; T]]) {
        let words: [i32; GROUP] = pulp::cast(steps.map(i16::from));
        for (slot, word) in slots.iter_mut().zip(words) {
            slot[token] = word;
        }
    }

    #[inline(always)]
    fn width(tokens: usize) -> usize {
        match tokens {
            0..=2 => 2,
            3..=4 => 4,
            _ => TOKENS,
        }
    }
}

struct Run<'a, 'b> {
    weights: &'a Pairs,
    layer: &'a Dense,
    tiles: &'a [Quantized],
    range: Range<usize>,
    out: &'a mut [&'b mut [f32]],
}

impl pulp::WithSimd for Run<'_, '_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let Run {
            weights,
            layer,
            tiles,
            range,
            out,
        } = self;
        let simd = weights.simd;
        let first = range.start;
        let groups = groups(layer.inputs);
        for (tile, outs) in tiles.iter().zip(out.chunks_mut(TOKENS)) {
            for panel in range.clone() {
                let pairs = &weights.pairs[panel * groups * GROUP..(panel + 1) * groups * GROUP];
                let sums = &weights.sums[panel * groups..(panel + 1) * groups];
                let at = Columns {
                    layer,
                    panel,
                    columns: (panel - first) * PANEL..(panel - first + 1) * PANEL,
                };
                match Pairs2::width(tile.tokens) {
                    2 => finish(&dot::<2>(simd, pairs, sums, tile), outs, &at),
                    4 => finish(&dot::<4>(simd, pairs, sums, tile), outs, &at),
                    _ => finish(&dot::<TOKENS>(simd, pairs, sums, tile), outs, &at),
                }
            }
        }
    }
}

/// The first `T` tokens of the tile with one panel's weights, group by group: the int32 sums
/// of a group scaled into the f32 totals, `totals[token][lane]`.
#[inline(always)]
fn dot<const T: usize>(
    simd: V3,
    pairs: &[Pair],
    weight_sums: &[[f32; PANEL]],
    tile: &Quantized,
) -> [[f32; PANEL]; T] {
    let mut totals = [[simd.splat_f32x8(0.0); 2]; T];
    let groups = pairs
        .chunks_exact(GROUP)
        .zip(tile.words.chunks_exact(GROUP));
    for (group, (pairs, values)) in groups.enumerate() {
        let zero: __m256i = simd.avx._mm256_setzero_si256();
        let mut sums = [[zero; 2]; T];
        for (weights, values) in pairs.iter().zip(values) {
            // No closures on this path: a closure is compiled without the AVX2 context and
            // would call each intrinsic instead of inlining it.
            let [low, high]: [pulp::i8x16; 2] = pulp::cast(weights.0);
            let low = simd.avx2._mm256_cvtepi8_epi16(pulp::cast(low));
            let high = simd.avx2._mm256_cvtepi8_epi16(pulp::cast(high));
            for (sum, value) in sums.iter_mut().zip(values) {
                let value = simd.avx._mm256_set1_epi32(*value);
                let products = [
                    simd.avx2._mm256_madd_epi16(low, value),
                    simd.avx2._mm256_madd_epi16(high, value),
                ];
                sum[0] = simd.avx2._mm256_add_epi32(sum[0], products[0]);
                sum[1] = simd.avx2._mm256_add_epi32(sum[1], products[1]);
            }
        }
        let weight_sums: [f32x8; 2] = pulp::cast(weight_sums[group]);
        let (scales, bases) = (&tile.scales[group], &tile.bases[group]);
        for (token, (total, sum)) in totals.iter_mut().zip(sums).enumerate() {
            let (scale, base) = (
                simd.splat_f32x8(scales[token]),
                simd.splat_f32x8(bases[token]),
            );
            for ((total, sum), weight_sums) in total.iter_mut().zip(sum).zip(weight_sums) {
                let sum: f32x8 = pulp::cast(simd.avx._mm256_cvtepi32_ps(sum));
                let scaled = simd.mul_add_f32x8(sum, scale, *total);
                *total = simd.mul_add_f32x8(weight_sums, base, scaled);
            }
        }
    }
    totals.map(pulp::cast)
}
