//! The dense layers' products, `out = x · Wᵀ + b`, shaped for what a sentence model computes on
//! a CPU: a query's dozen tokens (a skinny product, bound by reading the weights) and a
//! catalog batch's few hundred. The weights are repacked at load into panels of [`PANEL`]
//! outputs, input after input, so that a product reads each weight once per tile of
//! [`TILE_TOKENS`] tokens and every multiply-add goes to a register that is summed by nobody
//! else: no horizontal sums, no scratch copies. Int8 weights stay int8 in the panels and are
//! turned into f32 in registers as they are read; each output's row scale is applied once, to
//! its finished sum. With AVX2 + FMA (chosen at run time through `pulp`) the tile is explicit
//! SIMD; elsewhere a portable tile that the compiler vectorises for the target it has.
//!
//! Owns: the packed layout and the product. Must not: know the model's shape (`bert.rs`) or
//! the other kernels (`kernels.rs`).

use crate::compact::Values;

/// Outputs per panel: two AVX2 registers of f32.
const PANEL: usize = 16;
/// Tokens per register tile: 6 × 2 accumulators, two weight registers and a broadcast fill 15
/// of the 16 AVX2 registers.
const TILE_TOKENS: usize = 6;
/// Tokens per cache block: their inputs (at most 48 × 1,536 f32, 288 KiB) stay in the core's
/// L2 cache while every panel passes; a query's tokens are one block.
const BLOCK_TOKENS: usize = 8 * TILE_TOKENS;
/// Multiply-adds below which a product stays on one thread: a query's dozen tokens do (on a
/// busy two-core machine the second thread is seldom free, and waiting for it cost more than
/// it saved: 6.0–8.9 ms p50 split, 6.1–6.3 ms not, in `bench embed`); a long text's products
/// are split.
const PARALLEL_WORK: usize = 1 << 24;

/// A dense layer: `outputs` weight rows of `inputs` each (PyTorch's layout, packed at load) and
/// a bias per output.
#[derive(Debug)]
pub(crate) struct Dense {
    inputs: usize,
    outputs: usize,
    weights: Panels,
    /// Each output's row scale (1 for f32 weights), padded with zeros to whole panels.
    scales: Vec<f32>,
    bias: Vec<f32>,
}

/// The weights panel after panel: `PANEL` consecutive outputs' weights for input 0, then for
/// input 1…; the last panel padded with zero weights.
#[derive(Debug)]
enum Panels {
    F32(Vec<[f32; PANEL]>),
    Int8(Vec<Int8Row>),
}

/// One input's int8 weights of a panel, little-endian in two words: AVX2 sign-extends each
/// word straight from memory (a byte array cast to a vector would go through the stack).
#[derive(Debug, Clone, Copy)]
struct Int8Row([i64; 2]);

impl Int8Row {
    fn new(weights: [i8; PANEL]) -> Int8Row {
        let bytes = weights.map(|w| w.to_le_bytes()[0]);
        let (low, high) = bytes.split_at(PANEL / 2);
        let word = |half: &[u8]| {
            half.iter()
                .rev()
                .fold(0i64, |word, byte| (word << 8) | i64::from(*byte))
        };
        Int8Row([word(low), word(high)])
    }

    fn weights(self) -> [f32; PANEL] {
        let [low, high] = self.0.map(i64::to_le_bytes);
        let mut out = [0f32; PANEL];
        for (o, byte) in out.iter_mut().zip(low.iter().chain(&high)) {
            *o = f32::from(i8::from_le_bytes([*byte]));
        }
        out
    }
}

impl Dense {
    /// The layer of `weights` (`outputs` rows of `inputs`, row-major) and `bias`; `None` when
    /// their sizes do not say so.
    pub fn new(inputs: usize, outputs: usize, weights: Values, bias: Vec<f32>) -> Option<Dense> {
        if inputs == 0 || bias.len() != outputs || weights.len() != inputs * outputs {
            return None;
        }
        let panels = outputs.div_ceil(PANEL);
        let mut scales = vec![0f32; panels * PANEL];
        let weights = match weights {
            Values::F32(values) => {
                scales[..outputs].fill(1.0);
                Panels::F32(pack(&values, inputs, panels))
            }
            Values::Int8 {
                values,
                scales: rows,
            } => {
                if rows.len() != outputs {
                    return None;
                }
                scales[..outputs].copy_from_slice(&rows);
                let rows = pack(&values, inputs, panels);
                Panels::Int8(rows.into_iter().map(Int8Row::new).collect())
            }
        };
        Some(Dense {
            inputs,
            outputs,
            weights,
            scales,
            bias,
        })
    }

    /// Whether the weights are kept int8.
    #[cfg(test)]
    pub fn is_int8(&self) -> bool {
        matches!(self.weights, Panels::Int8(_))
    }

    /// `out` (tokens × outputs) = `x` (tokens × inputs) · Wᵀ + b. Splits the panels over two
    /// threads of the current rayon pool when it has them and the product is large.
    pub fn apply(&self, x: &[f32], out: &mut [f32]) {
        let tokens = x.len() / self.inputs;
        let rows: Vec<&[f32]> = x.chunks_exact(self.inputs).collect();
        let mut outs: Vec<&mut [f32]> = out.chunks_exact_mut(self.outputs).take(tokens).collect();
        let panels = self.outputs.div_ceil(PANEL);
        let work = tokens * self.inputs * self.outputs;
        if work < PARALLEL_WORK || panels < 2 || rayon::current_num_threads() < 2 {
            self.panels(&rows, 0..panels, &mut outs);
            return;
        }
        let half = panels / 2;
        let (mut left, mut right): (Vec<&mut [f32]>, Vec<&mut [f32]>) = outs
            .into_iter()
            .map(|row| row.split_at_mut(half * PANEL))
            .unzip();
        rayon::join(
            || self.panels(&rows, 0..half, &mut left),
            || self.panels(&rows, half..panels, &mut right),
        );
    }

    /// Outputs of the panels `range` of every token of `x`, written from column 0 of `out`.
    fn panels(&self, x: &[&[f32]], range: std::ops::Range<usize>, out: &mut [&mut [f32]]) {
        let product = Product {
            layer: self,
            x,
            range,
            out,
        };
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = pulp::x86::V3::try_new() {
            return pulp::Simd::vectorize(simd, avx2::Run { simd, product });
        }
        product.run(Portable);
    }
}

/// `values` (rows of `inputs`) as `panels` panels.
fn pack<T: Copy + Default>(values: &[T], inputs: usize, panels: usize) -> Vec<[T; PANEL]> {
    let mut packed = vec![[T::default(); PANEL]; panels * inputs];
    for (output, row) in values.chunks_exact(inputs).enumerate() {
        let (panel, lane) = (output / PANEL, output % PANEL);
        for (input, weight) in row.iter().enumerate() {
            packed[panel * inputs + input][lane] = *weight;
        }
    }
    packed
}

/// One product's arguments, run by a [`Tile`].
struct Product<'a, 'b> {
    layer: &'a Dense,
    x: &'a [&'a [f32]],
    range: std::ops::Range<usize>,
    out: &'a mut [&'b mut [f32]],
}

/// The sums of `R` tokens' inputs with one panel's weights: `sums[r][lane]`.
trait Tile: Copy {
    fn f32_tile<const R: usize>(self, panel: &[[f32; PANEL]], x: [&[f32]; R]) -> [[f32; PANEL]; R];
    fn int8_tile<const R: usize>(self, panel: &[Int8Row], x: [&[f32]; R]) -> [[f32; PANEL]; R];
}

impl Product<'_, '_> {
    #[inline(always)]
    fn run<T: Tile>(self, tile: T) {
        let Product {
            layer,
            x,
            range,
            out,
        } = self;
        let first = range.start;
        for (block, block_out) in x.chunks(BLOCK_TOKENS).zip(out.chunks_mut(BLOCK_TOKENS)) {
            for panel in range.clone() {
                let lanes = layer.inputs * panel..layer.inputs * (panel + 1);
                let columns = (panel - first) * PANEL..(panel - first + 1) * PANEL;
                let mut token = 0;
                while token < block.len() {
                    let count = TILE_TOKENS.min(block.len() - token);
                    let rows = &block[token..token + count];
                    let outs = &mut block_out[token..token + count];
                    let at = Columns {
                        layer,
                        panel,
                        columns: columns.clone(),
                    };
                    match &layer.weights {
                        Panels::F32(w) => {
                            tiles(tile, TileOf::F32(&w[lanes.clone()]), rows, outs, &at)
                        }
                        Panels::Int8(w) => {
                            tiles(tile, TileOf::Int8(&w[lanes.clone()]), rows, outs, &at);
                        }
                    }
                    token += count;
                }
            }
        }
    }
}

/// One panel's weights.
#[derive(Clone, Copy)]
enum TileOf<'a> {
    F32(&'a [[f32; PANEL]]),
    Int8(&'a [Int8Row]),
}

/// Where a panel's sums go: its scales and biases, and its columns of `out`.
struct Columns<'a> {
    layer: &'a Dense,
    panel: usize,
    columns: std::ops::Range<usize>,
}

/// The tile of the 1 to [`TILE_TOKENS`] tokens `rows`, written to `outs`.
#[inline(always)]
fn tiles<T: Tile>(
    tile: T,
    weights: TileOf<'_>,
    rows: &[&[f32]],
    outs: &mut [&mut [f32]],
    at: &Columns<'_>,
) {
    match rows.len() {
        6 => finish(tile_of::<T, 6>(tile, weights, rows), outs, at),
        5 => finish(tile_of::<T, 5>(tile, weights, rows), outs, at),
        4 => finish(tile_of::<T, 4>(tile, weights, rows), outs, at),
        3 => finish(tile_of::<T, 3>(tile, weights, rows), outs, at),
        2 => finish(tile_of::<T, 2>(tile, weights, rows), outs, at),
        1 => finish(tile_of::<T, 1>(tile, weights, rows), outs, at),
        _ => {}
    }
}

#[inline(always)]
fn tile_of<T: Tile, const R: usize>(
    tile: T,
    weights: TileOf<'_>,
    rows: &[&[f32]],
) -> [[f32; PANEL]; R] {
    let mut x: [&[f32]; R] = [&[]; R];
    for (slot, row) in x.iter_mut().zip(rows) {
        *slot = row;
    }
    match weights {
        TileOf::F32(panel) => tile.f32_tile(panel, x),
        TileOf::Int8(panel) => tile.int8_tile(panel, x),
    }
}

/// `sums` scaled, biased and written to the panel's columns of `outs` (the padding dropped).
#[inline(always)]
fn finish<const R: usize>(sums: [[f32; PANEL]; R], outs: &mut [&mut [f32]], at: &Columns<'_>) {
    let output = at.panel * PANEL;
    let width = PANEL.min(at.layer.outputs - output);
    let scales = &at.layer.scales[output..output + width];
    let bias = &at.layer.bias[output..output + width];
    for (sums, out) in sums.iter().zip(outs.iter_mut()) {
        let out = &mut out[at.columns.start..at.columns.start + width];
        for (((o, s), scale), b) in out.iter_mut().zip(sums).zip(scales).zip(bias) {
            *o = s * scale + b;
        }
    }
}

/// The tile in plain arithmetic, for CPUs without AVX2 + FMA.
#[derive(Clone, Copy)]
struct Portable;

impl Portable {
    #[inline(always)]
    fn tile<W: Copy, const R: usize>(
        panel: &[W],
        x: [&[f32]; R],
        weights_of: impl Fn(W) -> [f32; PANEL],
    ) -> [[f32; PANEL]; R] {
        let mut sums = [[0f32; PANEL]; R];
        let x = x.map(|row| &row[..panel.len()]);
        for (input, weights) in panel.iter().enumerate() {
            let weights = weights_of(*weights);
            for (sums, row) in sums.iter_mut().zip(x) {
                let value = row[input];
                for (sum, weight) in sums.iter_mut().zip(weights) {
                    *sum += value * weight;
                }
            }
        }
        sums
    }
}

impl Tile for Portable {
    fn f32_tile<const R: usize>(self, panel: &[[f32; PANEL]], x: [&[f32]; R]) -> [[f32; PANEL]; R] {
        Portable::tile(panel, x, |weights| weights)
    }

    fn int8_tile<const R: usize>(self, panel: &[Int8Row], x: [&[f32]; R]) -> [[f32; PANEL]; R] {
        Portable::tile(panel, x, Int8Row::weights)
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The tile in AVX2 + FMA: each panel row is two registers of f32 (read as they are, or
    //! sign-extended from int8 and converted), multiplied by each token's input broadcast.

    use pulp::x86::V3;
    use pulp::{f32x8, i8x16};

    use super::{Int8Row, PANEL, Product, Tile};

    /// A product run in AVX2 + FMA context (the `vectorize` call compiles it so).
    pub(super) struct Run<'a, 'b> {
        pub simd: V3,
        pub product: Product<'a, 'b>,
    }

    impl pulp::WithSimd for Run<'_, '_> {
        type Output = ();

        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) {
            self.product.run(Avx2(self.simd));
        }
    }

    #[derive(Clone, Copy)]
    struct Avx2(V3);

    impl Avx2 {
        #[inline(always)]
        fn tile<W: Lanes, const R: usize>(self, panel: &[W], x: [&[f32]; R]) -> [[f32; PANEL]; R] {
            let simd = self.0;
            let zero = simd.splat_f32x8(0.0);
            let mut sums = [[zero; 2]; R];
            let mut rows: [&[f32]; R] = [&[]; R];
            for (row, x) in rows.iter_mut().zip(x) {
                *row = &x[..panel.len()];
            }
            for (input, weights) in panel.iter().enumerate() {
                let [low, high] = W::lanes(simd, weights);
                for r in 0..R {
                    let value = simd.splat_f32x8(rows[r][input]);
                    sums[r][0] = simd.mul_add_f32x8(value, low, sums[r][0]);
                    sums[r][1] = simd.mul_add_f32x8(value, high, sums[r][1]);
                }
            }
            let mut out = [[0f32; PANEL]; R];
            for (out, sums) in out.iter_mut().zip(sums) {
                *out = pulp::cast(sums);
            }
            out
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
        #[inline(always)]
        fn f32_tile<const R: usize>(
            self,
            panel: &[[f32; PANEL]],
            x: [&[f32]; R],
        ) -> [[f32; PANEL]; R] {
            self.tile(panel, x)
        }

        #[inline(always)]
        fn int8_tile<const R: usize>(self, panel: &[Int8Row], x: [&[f32]; R]) -> [[f32; PANEL]; R] {
            self.tile(panel, x)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain sum, in f64, of `x` · `weights`ᵀ (row-major, `inputs` per row) + `bias`.
    fn naive(weights: &[f32], bias: &[f32], inputs: usize, x: &[f32]) -> Vec<f64> {
        x.chunks_exact(inputs)
            .flat_map(|row| {
                weights.chunks_exact(inputs).zip(bias).map(|(w, b)| {
                    let sum: f64 = row.iter().zip(w).map(|(a, w)| f64::from(a * w)).sum();
                    sum + f64::from(*b)
                })
            })
            .collect()
    }

    fn value(i: usize) -> f32 {
        ((i * 7919 % 1000) as f32 / 500.0) - 1.0
    }

    fn assert_close(ours: &[f32], plain: &[f64]) {
        assert_eq!(ours.len(), plain.len());
        for (ours, plain) in ours.iter().zip(plain) {
            let error = (f64::from(*ours) - plain).abs();
            assert!(error <= 1e-4 * (1.0 + plain.abs()), "{ours} vs {plain}");
        }
    }

    /// Sizes that exercise every remainder (tokens not a multiple of a tile or a block,
    /// outputs not a multiple of a panel) and both the one- and the two-thread path.
    const SHAPES: [(usize, usize, usize); 6] = [
        (1, 3, 1),
        (5, 19, 7),
        (13, 64, 33),
        (37, 64, 10),
        (70, 384, 1153),
        (12, 1536, 384),
    ];

    #[test]
    fn f32_products_match_the_plain_sum_at_every_shape() {
        for (tokens, inputs, outputs) in SHAPES {
            let weights: Vec<f32> = (0..inputs * outputs).map(value).collect();
            let bias: Vec<f32> = (0..outputs).map(|i| value(i + 3)).collect();
            let x: Vec<f32> = (0..tokens * inputs).map(|i| value(i + 11)).collect();
            let layer = Dense::new(inputs, outputs, Values::F32(weights.clone()), bias.clone())
                .expect("sizes fit");
            let mut out = vec![0f32; tokens * outputs];
            layer.apply(&x, &mut out);
            assert_close(&out, &naive(&weights, &bias, inputs, &x));
        }
    }

    #[test]
    fn int8_products_are_those_of_the_weights_they_stand_for() {
        for (tokens, inputs, outputs) in SHAPES {
            let values: Vec<i8> = (0..inputs * outputs)
                .map(|i| (i * 37 % 255) as u8 as i8)
                .collect();
            let scales: Vec<f32> = (0..outputs).map(|r| 0.01 * (r % 7 + 1) as f32).collect();
            let bias: Vec<f32> = (0..outputs).map(|r| r as f32 / 10.0).collect();
            let x: Vec<f32> = (0..tokens * inputs)
                .map(|i| (i % 13) as f32 / 7.0 - 0.9)
                .collect();
            let int8 = Values::Int8 { values, scales };
            let weights = int8.clone().into_f32();
            let layer = Dense::new(inputs, outputs, int8, bias.clone()).expect("sizes fit");
            let mut out = vec![0f32; tokens * outputs];
            layer.apply(&x, &mut out);
            assert_close(&out, &naive(&weights, &bias, inputs, &x));
        }
    }

    #[test]
    fn the_portable_tile_gives_the_same_products() {
        let (tokens, inputs, outputs) = (9, 40, 20);
        let int8 = Values::Int8 {
            values: (0..inputs * outputs)
                .map(|i| (i * 37 % 255) as u8 as i8)
                .collect(),
            scales: vec![0.02; outputs],
        };
        let bias = vec![0.25; outputs];
        let x: Vec<f32> = (0..tokens * inputs).map(|i| value(i + 5)).collect();
        let f32_weights = Values::F32((0..inputs * outputs).map(value).collect());
        for weights in [f32_weights, int8] {
            let plain = naive(&weights.clone().into_f32(), &bias, inputs, &x);
            let layer = Dense::new(inputs, outputs, weights, bias.clone()).expect("fits");
            let rows: Vec<&[f32]> = x.chunks_exact(inputs).collect();
            let mut out = vec![0f32; tokens * outputs];
            let mut outs: Vec<&mut [f32]> = out.chunks_exact_mut(outputs).collect();
            let product = Product {
                layer: &layer,
                x: &rows,
                range: 0..outputs.div_ceil(PANEL),
                out: &mut outs,
            };
            product.run(Portable);
            assert_close(&out, &plain);
        }
    }

    #[test]
    fn an_int8_row_keeps_its_sixteen_weights_in_order() {
        let weights: [i8; PANEL] = std::array::from_fn(|i| (i as i8 - 8) * 15);
        let row = Int8Row::new(weights);
        assert_eq!(row.weights(), weights.map(f32::from));
    }

    #[test]
    fn sizes_that_do_not_fit_are_refused() {
        assert!(Dense::new(4, 2, Values::F32(vec![0.0; 7]), vec![0.0; 2]).is_none());
        assert!(Dense::new(4, 2, Values::F32(vec![0.0; 8]), vec![0.0; 3]).is_none());
        let int8 = Values::Int8 {
            values: vec![0; 8],
            scales: vec![1.0],
        };
        assert!(Dense::new(4, 2, int8, vec![0.0; 2]).is_none());
        assert!(Dense::new(0, 0, Values::F32(Vec::new()), Vec::new()).is_none());
    }
}
