//! The dense layers' products, `out = x · Wᵀ + b`, shaped for what a sentence model computes on
//! a CPU: a query's dozen tokens (a skinny product, bound by reading the weights), a long
//! request's few hundred and a catalog batch's thousand. The weights are repacked at load into
//! panels of [`PANEL`] outputs, input after input; a tile of tokens has its inputs interleaved
//! once (each input's values for every token of the tile side by side), then meets every panel,
//! so that each multiply-add goes to a register that is summed by nobody else: no horizontal
//! sums, and the tile's values are broadcast from one place. Int8 weights stay int8 in the panels
//! and are turned into f32 in registers as they are read; each output's row scale is applied
//! once, to its finished sum. The tile is the best of the instructions `isa.rs` chose: AVX-512
//! (16 tokens, a panel row one register), AVX2 + FMA (6 tokens, a panel row two registers), or
//! a portable one that the compiler vectorises for the target it has. Where the CPU has AVX-512
//! VNNI or AVX2, int8 weights are laid out for those instead and multiplied in integers by the
//! tokens' inputs quantized to int8 steps (`steps.rs`; `vnni.rs`, `pairs.rs`).
//!
//! Owns: the packed layout and the product. Must not: know the model's shape (`bert.rs`) or
//! the other kernels (`kernels.rs`).

use std::ops::Range;

use crate::compact::Values;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod pairs;
#[cfg(target_arch = "x86_64")]
mod steps;
#[cfg(target_arch = "x86_64")]
mod vnni;

#[cfg(target_arch = "x86_64")]
pub(crate) use vnni::Vnni;

/// Outputs per panel: one AVX-512 register of f32, two AVX2 ones.
const PANEL: usize = 16;
/// Multiply-adds below which a product stays on one thread: a query's dozen tokens do (on a
/// busy two-core machine the second thread is seldom free, and waiting for it cost more than
/// it saved: 6.0–8.9 ms p50 split, 6.1–6.3 ms not, in `bench embed`); a long text's products
/// are split.
const PARALLEL_WORK: usize = 1 << 24;

/// How the products of int8 weights are computed: with the tokens' inputs in f32 (every CPU), or
/// quantized to int8 steps (`steps.rs`) and multiplied in integers, by AVX-512 VNNI or by AVX2
/// (a long request embeds about twice as fast with VNNI as with the AVX-512 f32 tile, and 1.2×
/// as fast with AVX2's integers as with its f32 tile; the vectors within 0.1% (cosine) of the
/// f32 inputs' ones, 0.03% but for texts of a word or none, and the same with either). F32
/// weights are always multiplied by f32 inputs.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kernel {
    FloatInputs,
    #[cfg(target_arch = "x86_64")]
    Vnni(Vnni),
    #[cfg(target_arch = "x86_64")]
    Pairs(pulp::x86::V3),
}

impl Kernel {
    /// The fastest the chosen instructions (`isa.rs`) run.
    pub fn best() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(vnni) = crate::isa::vnni() {
                return Kernel::Vnni(vnni);
            }
            if let Some(simd) = crate::isa::v3() {
                return Kernel::Pairs(simd);
            }
        }
        Kernel::FloatInputs
    }
}

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
    /// Int8 weights laid out for AVX-512 VNNI, on a CPU that has it.
    #[cfg(target_arch = "x86_64")]
    Quads(vnni::Quads),
    /// Int8 weights laid out for AVX2's integer products.
    #[cfg(target_arch = "x86_64")]
    Pairs(pairs::Pairs),
}

/// One input's int8 weights of a panel, little-endian in two words: AVX2 sign-extends each
/// word straight from memory (a byte array cast to a vector would go through the stack), and
/// AVX-512 the pair at once.
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
    /// The layer of `weights` (`outputs` rows of `inputs`, row-major) and `bias`, int8 weights
    /// laid out for `kernel`; `None` when their sizes do not say so.
    pub fn new(
        inputs: usize,
        outputs: usize,
        weights: Values,
        bias: Vec<f32>,
        kernel: Kernel,
    ) -> Option<Dense> {
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
                match kernel {
                    #[cfg(target_arch = "x86_64")]
                    Kernel::Vnni(vnni) => {
                        Panels::Quads(vnni::Quads::new(vnni, &values, inputs, panels))
                    }
                    #[cfg(target_arch = "x86_64")]
                    Kernel::Pairs(simd) => {
                        Panels::Pairs(pairs::Pairs::new(simd, &values, inputs, panels))
                    }
                    Kernel::FloatInputs => {
                        let rows = pack(&values, inputs, panels);
                        Panels::Int8(rows.into_iter().map(Int8Row::new).collect())
                    }
                }
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
        !matches!(self.weights, Panels::F32(_))
    }

    /// `out` (tokens × outputs) = `x` (tokens × inputs) · Wᵀ + b. Splits the panels over two
    /// threads of the current rayon pool when it has them and the product is large; for the
    /// integer products the tokens' inputs are quantized once, before.
    pub fn apply(&self, x: &[f32], out: &mut [f32]) {
        let tokens = x.len() / self.inputs;
        let rows: Vec<&[f32]> = x.chunks_exact(self.inputs).collect();
        let outs: Vec<&mut [f32]> = out.chunks_exact_mut(self.outputs).take(tokens).collect();
        let weights = match &self.weights {
            Panels::F32(panels) => TileWeights::F32(panels),
            Panels::Int8(panels) => TileWeights::Int8(panels),
            #[cfg(target_arch = "x86_64")]
            Panels::Quads(quads) => {
                let tiles = quads.quantize(self.inputs, &rows);
                let run = |range, out: &mut [&mut [f32]]| quads.run(self, &tiles, range, out);
                return self.split(tokens, outs, run);
            }
            #[cfg(target_arch = "x86_64")]
            Panels::Pairs(pairs) => {
                let tiles = pairs.quantize(self.inputs, &rows);
                let run = |range, out: &mut [&mut [f32]]| pairs.run(self, &tiles, range, out);
                return self.split(tokens, outs, run);
            }
        };
        let tile = TileKind::best();
        let run = |range, out: &mut [&mut [f32]]| {
            let product = Product {
                layer: self,
                x: &rows,
                range,
                out,
            };
            tile.run(product, weights);
        };
        self.split(tokens, outs, run);
    }

    /// `run` over every panel: on this thread, or half the panels on each of two threads of
    /// the current rayon pool when it has them and the product is large. `run` gets a range
    /// of panels and the rows of `out` from that range's first column.
    fn split(
        &self,
        tokens: usize,
        mut outs: Vec<&mut [f32]>,
        run: impl Fn(Range<usize>, &mut [&mut [f32]]) + Sync,
    ) {
        let panels = self.outputs.div_ceil(PANEL);
        let work = tokens * self.inputs * self.outputs;
        if work < PARALLEL_WORK || panels < 2 || rayon::current_num_threads() < 2 {
            return run(0..panels, &mut outs);
        }
        let half = panels / 2;
        let (mut left, mut right): (Vec<&mut [f32]>, Vec<&mut [f32]>) = outs
            .into_iter()
            .map(|row| row.split_at_mut(half * PANEL))
            .unzip();
        rayon::join(|| run(0..half, &mut left), || run(half..panels, &mut right));
    }
}

/// Which tile computes an f32 tile's products: the best of the tier `isa.rs` chose.
#[derive(Debug, Clone, Copy)]
enum TileKind {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2(pulp::x86::V3),
    #[cfg(target_arch = "x86_64")]
    Avx512(pulp::x86::V4),
}

impl TileKind {
    fn best() -> TileKind {
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = crate::isa::v4() {
            return TileKind::Avx512(simd);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = crate::isa::v3() {
            return TileKind::Avx2(simd);
        }
        TileKind::Portable
    }

    /// `product` of `weights` by this tile, compiled for its instructions.
    fn run(self, product: Product<'_, '_>, weights: TileWeights<'_>) {
        match self {
            TileKind::Portable => product.run(Portable, weights),
            #[cfg(target_arch = "x86_64")]
            TileKind::Avx2(simd) => pulp::Simd::vectorize(
                simd,
                Run {
                    tile: avx2::Avx2(simd),
                    product,
                    weights,
                },
            ),
            #[cfg(target_arch = "x86_64")]
            TileKind::Avx512(simd) => pulp::Simd::vectorize(
                simd,
                Run {
                    tile: avx512::Avx512(simd),
                    product,
                    weights,
                },
            ),
        }
    }
}

/// A product run by `tile` in the SIMD context the `vectorize` call compiles it in (its body
/// and the tile's, inlined).
struct Run<'a, 'b, T> {
    tile: T,
    product: Product<'a, 'b>,
    weights: TileWeights<'a>,
}

impl<T: Tile> pulp::WithSimd for Run<'_, '_, T> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        self.product.run(self.tile, self.weights);
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

/// The sums of a tile of [`Tile::TOKENS`] tokens with one panel's weights. `x` holds the tile's
/// inputs interleaved, `x[input * TOKENS + token]` (a tile short of tokens padded with zeros);
/// `sums[token][lane]` receives them.
trait Tile: Copy {
    const TOKENS: usize;
    fn f32_tile(self, panel: &[[f32; PANEL]], x: &[f32], sums: &mut [[f32; PANEL]]);
    fn int8_tile(self, panel: &[Int8Row], x: &[f32], sums: &mut [[f32; PANEL]]);
}

/// The weights a [`Tile`] reads: f32, or int8 rows turned into f32 in registers.
#[derive(Clone, Copy)]
enum TileWeights<'a> {
    F32(&'a [[f32; PANEL]]),
    Int8(&'a [Int8Row]),
}

impl Product<'_, '_> {
    #[inline(always)]
    fn run<T: Tile>(self, tile: T, weights: TileWeights<'_>) {
        let Product {
            layer,
            x,
            range,
            out,
        } = self;
        let first = range.start;
        let mut tile_x = vec![0f32; layer.inputs * T::TOKENS];
        let mut sums = vec![[0f32; PANEL]; T::TOKENS];
        for (rows, outs) in x.chunks(T::TOKENS).zip(out.chunks_mut(T::TOKENS)) {
            interleave(rows, T::TOKENS, &mut tile_x);
            for panel in range.clone() {
                let lanes = layer.inputs * panel..layer.inputs * (panel + 1);
                match weights {
                    TileWeights::F32(w) => tile.f32_tile(&w[lanes], &tile_x, &mut sums),
                    TileWeights::Int8(w) => tile.int8_tile(&w[lanes], &tile_x, &mut sums),
                }
                let at = Columns {
                    layer,
                    panel,
                    columns: (panel - first) * PANEL..(panel - first + 1) * PANEL,
                };
                finish(&sums, outs, &at);
            }
        }
    }
}

/// `rows` (at most `tokens` of them) written input by input into `tile_x`, the tokens the tile
/// lacks as zeros.
fn interleave(rows: &[&[f32]], tokens: usize, tile_x: &mut [f32]) {
    for (input, slot) in tile_x.chunks_exact_mut(tokens).enumerate() {
        for (token, value) in slot.iter_mut().enumerate() {
            *value = rows.get(token).map_or(0.0, |row| row[input]);
        }
    }
}

/// Where a panel's sums go: its scales and biases, and its columns of `out`.
struct Columns<'a> {
    layer: &'a Dense,
    panel: usize,
    columns: std::ops::Range<usize>,
}

/// `sums` scaled, biased and written to the panel's columns of `outs` (the padding, of tokens
/// and of outputs, dropped).
#[inline(always)]
fn finish(sums: &[[f32; PANEL]], outs: &mut [&mut [f32]], at: &Columns<'_>) {
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
    const TOKENS: usize = 4;

    #[inline(always)]
    fn tile<W: Copy>(
        panel: &[W],
        x: &[f32],
        sums: &mut [[f32; PANEL]],
        weights_of: impl Fn(W) -> [f32; PANEL],
    ) {
        let mut acc = [[0f32; PANEL]; Portable::TOKENS];
        let (x, _) = x.as_chunks::<{ Portable::TOKENS }>();
        for (weights, values) in panel.iter().zip(x) {
            let weights = weights_of(*weights);
            for (acc, value) in acc.iter_mut().zip(values) {
                for (sum, weight) in acc.iter_mut().zip(weights) {
                    *sum += value * weight;
                }
            }
        }
        sums.copy_from_slice(&acc);
    }
}

impl Tile for Portable {
    const TOKENS: usize = Portable::TOKENS;

    fn f32_tile(self, panel: &[[f32; PANEL]], x: &[f32], sums: &mut [[f32; PANEL]]) {
        Portable::tile(panel, x, sums, |weights| weights);
    }

    fn int8_tile(self, panel: &[Int8Row], x: &[f32], sums: &mut [[f32; PANEL]]) {
        Portable::tile(panel, x, sums, Int8Row::weights);
    }
}

#[cfg(test)]
mod tests;
