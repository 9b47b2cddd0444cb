//! A token's inputs as int8 steps, for the integer products (`vnni.rs`, `pairs.rs`): each group
//! of [`GROUP_INPUTS`] inputs has its own range, low to high, in 256 steps (`x ≈ low + scale ×
//! (q + 128)`, `q` in -128..=127), so that each input moves by at most half a step and an
//! outlying input (BERT's few large dimensions) coarsens only its own group. Both products
//! quantize with this one function, so a CPU with either computes the same vectors, but for
//! float rounding. Written once over `pulp`'s vectors and inlined into each product's own
//! instruction context.
//!
//! Owns: the steps, a tile's steps as the products read them ([`TileSteps`]), and each
//! group's sum of weights that the steps' bases multiply. Must not: know what instructions
//! read them.

use pulp::Simd;

use super::PANEL;

/// Inputs quantized with one range per token.
pub(super) const GROUP_INPUTS: usize = 64;

/// One group of a token's inputs as steps.
pub(super) struct GroupSteps {
    /// `q` of each input, in -128..=127.
    pub steps: [i8; GROUP_INPUTS],
    /// What a step is worth.
    pub scale: f32,
    /// `low + 128 × scale`: what an input of step 0 stands for, so that `x ≈ base + scale × q`.
    pub base: f32,
    /// `Σq`.
    pub sum: i32,
}

/// Group `group` of `row` as steps, in `simd`'s vectors (64 inputs are whole vectors of every
/// width). The inputs past the row's end are taken as copies of the group's first value, so
/// that they leave its range as it is; a group wholly past the end (a token a tile lacks, `row`
/// empty) is all zeros. The rounding is by adding 1.5 × 2²³, whose float's last place is 1: the
/// sum's low bits are the integer nearest, ties to even.
#[inline(always)]
pub(super) fn group_steps<S: Simd>(simd: S, row: &[f32], group: usize) -> GroupSteps {
    const ROUNDER: f32 = 12_582_912.0;
    let start = (group * GROUP_INPUTS).min(row.len());
    let values = &row[start..(start + GROUP_INPUTS).min(row.len())];
    let mut padded = [values.first().copied().unwrap_or(0.0); GROUP_INPUTS];
    padded[..values.len()].copy_from_slice(values);
    let (vectors, _) = S::as_simd_f32s(&padded);
    let (mut low, mut high) = (simd.splat_f32s(padded[0]), simd.splat_f32s(padded[0]));
    for vector in vectors {
        low = simd.min_f32s(low, *vector);
        high = simd.max_f32s(high, *vector);
    }
    let (low, high) = (simd.reduce_min_f32s(low), simd.reduce_max_f32s(high));
    let (scale, inverse) = if high > low {
        ((high - low) / 255.0, 255.0 / (high - low))
    } else {
        (0.0, 0.0)
    };
    let mut wide = [0i32; GROUP_INPUTS];
    let (lows, inverses) = (simd.splat_f32s(low), simd.splat_f32s(inverse));
    // The rounded sum's bits less those of 1.5 × 2²³ and of 128 steps: `q` at once.
    let (rounder, step_zero) = (
        simd.splat_f32s(ROUNDER),
        simd.splat_u32s(ROUNDER.to_bits() + 128),
    );
    let (lowest, highest) = (simd.splat_i32s(-128), simd.splat_i32s(127));
    let (slots, _) = S::as_mut_simd_i32s(&mut wide);
    for (slot, vector) in slots.iter_mut().zip(vectors) {
        let up = simd.mul_f32s(simd.sub_f32s(*vector, lows), inverses);
        let bits = simd.transmute_u32s_f32s(simd.add_f32s(up, rounder));
        let q = simd.transmute_i32s_u32s(simd.sub_u32s(bits, step_zero));
        // Clamped, so a NaN input (whatever its bits) is a step like any other.
        *slot = simd.min_i32s(simd.max_i32s(q, lowest), highest);
    }
    let mut steps = [0i8; GROUP_INPUTS];
    let mut sum = 0i32;
    for (step, wide) in steps.iter_mut().zip(wide) {
        sum += wide;
        *step = wide as i8;
    }
    GroupSteps {
        steps,
        scale,
        base: low + 128.0 * scale,
        sum,
    }
}

/// Groups of a row of `inputs`.
pub(super) fn groups(inputs: usize) -> usize {
    inputs.div_ceil(GROUP_INPUTS)
}

/// Each group's sum of weights per output of `values` (rows of `inputs`, int8) laid out in
/// `panels` panels, panel after panel: what the tokens' bases multiply.
pub(super) fn weight_sums(values: &[i8], inputs: usize, panels: usize) -> Vec<[f32; PANEL]> {
    let groups = groups(inputs);
    let mut sums = vec![[0f32; PANEL]; panels * groups];
    for (output, row) in values.chunks_exact(inputs).enumerate() {
        let (panel, lane) = (output / PANEL, output % PANEL);
        for (group, weights) in row.chunks(GROUP_INPUTS).enumerate() {
            let sum: i32 = weights.iter().map(|w| i32::from(*w)).sum();
            sums[panel * groups + group][lane] = sum as f32;
        }
    }
    sums
}

/// How a product reads a tile: a group's steps as `i32` words, each holding consecutive steps
/// as its instruction multiplies them; and how many tokens a tile of fewer is computed as.
pub(super) trait TileLayout {
    /// Words per group.
    const WORDS: usize;
    /// `steps` as words, written to `slots[word][token]`.
    fn place<const T: usize>(steps: &[i8; GROUP_INPUTS], token: usize, slots: &mut [[i32; T]]);
    /// The tokens a tile of `tokens` is computed as (a short query's last tile needs no full
    /// tile).
    fn width(tokens: usize) -> usize;
}

/// A tile of up to `T` tokens quantized, group by group: `words[word][token]` (the product
/// broadcasts a token's word from beside the tile's other tokens' ones), and per group and
/// token the step's worth, the base (`x ≈ base + scale × q`) and `Σq`. The slots past its
/// tokens, up to the width it is computed as, are an empty row's steps: their outputs are
/// dropped.
pub(super) struct TileSteps<const T: usize> {
    pub tokens: usize,
    pub words: Vec<[i32; T]>,
    pub scales: Vec<[f32; T]>,
    pub bases: Vec<[f32; T]>,
    pub sums: Vec<[i32; T]>,
}

/// `rows` (of `inputs` each) quantized, a tile of at most `T` tokens at a time, each computed
/// as `L::width(tokens)` tokens, in `simd`'s instruction context.
pub(super) fn quantize<const T: usize, L: TileLayout>(
    simd: impl Simd,
    inputs: usize,
    rows: &[&[f32]],
) -> Vec<TileSteps<T>> {
    simd.vectorize(Quantize::<T, L> {
        inputs,
        rows,
        layout: std::marker::PhantomData,
    })
}

/// [`quantize`]'s arguments, as the work `pulp` compiles for an instruction context.
struct Quantize<'a, 'b, const T: usize, L> {
    inputs: usize,
    rows: &'a [&'b [f32]],
    layout: std::marker::PhantomData<L>,
}

impl<const T: usize, L: TileLayout> pulp::WithSimd for Quantize<'_, '_, T, L> {
    type Output = Vec<TileSteps<T>>;

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> Vec<TileSteps<T>> {
        tiles::<T, L, S>(simd, self.inputs, self.rows)
    }
}

/// [`quantize`]'s body (a loop, not a closure: a closure is compiled without the instruction
/// context).
#[inline(always)]
fn tiles<const T: usize, L: TileLayout, S: Simd>(
    simd: S,
    inputs: usize,
    rows: &[&[f32]],
) -> Vec<TileSteps<T>> {
    let groups = groups(inputs);
    let mut tiles = Vec::with_capacity(rows.len().div_ceil(T));
    for rows in rows.chunks(T) {
        let mut tile = TileSteps {
            tokens: rows.len(),
            words: vec![[0; T]; groups * L::WORDS],
            scales: vec![[0.0; T]; groups],
            bases: vec![[0.0; T]; groups],
            sums: vec![[0; T]; groups],
        };
        for token in 0..L::width(rows.len()) {
            let row = rows.get(token).copied().unwrap_or(&[]);
            for (group, slots) in tile.words.chunks_exact_mut(L::WORDS).enumerate() {
                let steps = group_steps(simd, row, group);
                L::place(&steps.steps, token, slots);
                tile.scales[group][token] = steps.scale;
                tile.bases[group][token] = steps.base;
                tile.sums[group][token] = steps.sum;
            }
        }
        tiles.push(tile);
    }
    tiles
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_input_is_within_half_a_step_of_what_its_step_stands_for() {
        let row: Vec<f32> = (0..150)
            .map(|i| ((i * 7919 % 1000) as f32 / 300.0) - 1.5)
            .collect();
        for group in 0..3 {
            let steps = group_steps(pulp::Scalar::new(), &row, group);
            let values = &row[group * 64..(group * 64 + 64).min(row.len())];
            let sum: i32 = steps.steps.iter().map(|q| i32::from(*q)).sum();
            assert_eq!(sum, steps.sum);
            for (value, q) in values.iter().zip(steps.steps) {
                let stands_for = steps.base + steps.scale * f32::from(q);
                assert!(
                    (value - stands_for).abs() <= steps.scale * 0.5 + 1e-6,
                    "group {group}: {value} as {stands_for}"
                );
            }
        }
    }

    #[test]
    fn padding_and_missing_tokens_leave_the_range_as_it_is() {
        // The last group holds two inputs: the padding copies the first, so the range is theirs.
        let row = [0.0f32; 64]
            .into_iter()
            .chain([3.0, 5.0])
            .collect::<Vec<_>>();
        let last = group_steps(pulp::Scalar::new(), &row, 1);
        assert_eq!((last.steps[0], last.steps[1]), (-128, 127));
        assert!(last.steps[2..].iter().all(|q| *q == -128));
        assert!((last.base + last.scale * -128.0 - 3.0).abs() < 1e-6);
        let none = group_steps(pulp::Scalar::new(), &[], 0);
        assert_eq!((none.scale, none.base, none.sum), (0.0, 0.0, -128 * 64));
    }
}
