//! The tile in AVX-512: sixteen tokens, each panel row one register of f32 (read as it is, or
//! sign-extended from int8 and converted), multiplied by each token's input broadcast; the
//! sixteen sums and the weights take 17 of the 32 registers, and twice the lanes of AVX2 go
//! through each multiply-add.

use pulp::x86::V4;
use pulp::{f32x16, i8x16};

use super::{Int8Row, PANEL, Tile};

/// Tokens per tile.
const TOKENS: usize = 16;

/// The tile, made with the proof that the CPU has its instructions.
#[derive(Clone, Copy)]
pub(super) struct Avx512(pub V4);

impl Avx512 {
    #[inline(always)]
    fn tile<W: Lanes>(self, panel: &[W], x: &[f32], sums: &mut [[f32; PANEL]]) {
        let simd = self.0;
        let mut acc = [simd.splat_f32x16(0.0); TOKENS];
        let (x, _) = x.as_chunks::<TOKENS>();
        for (weights, values) in panel.iter().zip(x) {
            let weights = W::lanes(simd, weights);
            for (acc, value) in acc.iter_mut().zip(values) {
                *acc = simd.mul_add_f32x16(simd.splat_f32x16(*value), weights, *acc);
            }
        }
        for (sums, acc) in sums.iter_mut().zip(acc) {
            *sums = pulp::cast(acc);
        }
    }
}

/// A panel row as one register of f32. (No closures on this path: a closure is compiled
/// without the AVX-512 context and would call each intrinsic instead of inlining it.)
trait Lanes: Copy {
    fn lanes(simd: V4, weights: &Self) -> f32x16;
}

impl Lanes for [f32; PANEL] {
    #[inline(always)]
    fn lanes(_: V4, weights: &[f32; PANEL]) -> f32x16 {
        pulp::cast(*weights)
    }
}

impl Lanes for Int8Row {
    #[inline(always)]
    fn lanes(simd: V4, weights: &Int8Row) -> f32x16 {
        let bytes: i8x16 = pulp::cast(weights.0);
        simd.convert_i32x16_to_f32x16(simd.convert_i8x16_to_i32x16(bytes))
    }
}

impl Tile for Avx512 {
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
