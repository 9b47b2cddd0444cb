//! The tile in AVX2 + FMA: six tokens, each panel row two registers of f32 (read as they are,
//! or sign-extended from int8 and converted), multiplied by each token's input broadcast; the
//! twelve sums, two weight registers and a broadcast fill 15 of the 16 registers.

use pulp::x86::V3;
use pulp::{f32x8, i8x16};

use super::{Int8Row, PANEL, Tile};

/// Tokens per tile.
const TOKENS: usize = 6;

/// The tile, made with the proof that the CPU has its instructions.
#[derive(Clone, Copy)]
pub(super) struct Avx2(pub V3);

impl Avx2 {
    #[inline(always)]
    fn tile<W: Lanes>(self, panel: &[W], x: &[f32], sums: &mut [[f32; PANEL]]) {
        let simd = self.0;
        let zero = simd.splat_f32x8(0.0);
        let mut acc = [[zero; 2]; TOKENS];
        let (x, _) = x.as_chunks::<TOKENS>();
        for (weights, values) in panel.iter().zip(x) {
            let [low, high] = W::lanes(simd, weights);
            for (acc, value) in acc.iter_mut().zip(values) {
                let value = simd.splat_f32x8(*value);
                acc[0] = simd.mul_add_f32x8(value, low, acc[0]);
                acc[1] = simd.mul_add_f32x8(value, high, acc[1]);
            }
        }
        for (sums, acc) in sums.iter_mut().zip(acc) {
            *sums = pulp::cast(acc);
        }
    }
}

/// A panel row as two registers of f32. (No closures on this path: a closure is compiled
/// without the AVX2 context and would call each intrinsic instead of inlining it.)
trait Lanes: Copy {
    fn lanes(simd: V3, weights: &Self) -> [f32x8; 2];
}

impl Lanes for [f32; PANEL] {
    #[inline(always)]
    fn lanes(_: V3, weights: &[f32; PANEL]) -> [f32x8; 2] {
        pulp::cast(*weights)
    }
}

impl Lanes for Int8Row {
    #[inline(always)]
    fn lanes(simd: V3, weights: &Int8Row) -> [f32x8; 2] {
        let [low, high] = weights.0;
        [widen(simd, low), widen(simd, high)]
    }
}

/// Eight int8 values (a little-endian word) as f32.
#[inline(always)]
fn widen(simd: V3, word: i64) -> f32x8 {
    let bytes: i8x16 = pulp::cast(simd.sse2._mm_set_epi64x(0, word));
    simd.convert_i32x8_to_f32x8(simd.convert_i8x16_to_i32x8(bytes))
}

impl Tile for Avx2 {
    const TOKENS: usize = TOKENS;

    #[inline(always)]
    fn f32_tile(self, panel: &[[f32; PANEL]], x: &[f32], sums: &mut [[f32; PANEL]]) {
        self.tile(panel, x, sums);
    }

    #[inline(always)]
    fn int8_tile(self, panel: &[Int8Row], x: &[f32], sums: &mut [[f32; PANEL]]) {
        self.tile(panel, x, sums);
    }
}
