//! The products against the plain sum in f64: every tile this CPU runs (portable, AVX2,
//! AVX-512) at shapes that leave every remainder, on two threads where a product is split; and
//! the integer products (VNNI, AVX2's pairs) against the same sum over the inputs as
//! `steps.rs` quantizes them.

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

/// `f` run in a pool of two threads, so that `apply` splits the products large enough to be
/// split whatever the machine's core count.
fn on_two_threads<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a pool of two threads")
        .install(f)
}

/// Sizes that exercise every remainder (tokens not a multiple of a tile,
/// inputs not a multiple of four or of a quantization group, outputs not a multiple of a
/// panel) and both the one- and the two-thread path.
const SHAPES: [(usize, usize, usize); 7] = [
    (1, 3, 1),
    (5, 19, 7),
    (13, 64, 33),
    (37, 64, 10),
    (3, 150, 20),
    (70, 384, 1153),
    (12, 1536, 384),
];

/// Int8 weights of `inputs` × `outputs` with their row scales, the f32 weights they stand
/// for, a bias, and inputs for `tokens` tokens.
fn int8_case(tokens: usize, inputs: usize, outputs: usize) -> (Values, Vec<f32>, Vec<f32>) {
    let values: Vec<i8> = (0..inputs * outputs)
        .map(|i| (i * 37 % 255) as u8 as i8)
        .collect();
    let scales: Vec<f32> = (0..outputs).map(|r| 0.01 * (r % 7 + 1) as f32).collect();
    let bias: Vec<f32> = (0..outputs).map(|r| r as f32 / 10.0).collect();
    let x: Vec<f32> = (0..tokens * inputs)
        .map(|i| (i % 13) as f32 / 7.0 - 0.9)
        .collect();
    (Values::Int8 { values, scales }, bias, x)
}

#[test]
fn f32_products_match_the_plain_sum_at_every_shape() {
    for (tokens, inputs, outputs) in SHAPES {
        let weights: Vec<f32> = (0..inputs * outputs).map(value).collect();
        let bias: Vec<f32> = (0..outputs).map(|i| value(i + 3)).collect();
        let x: Vec<f32> = (0..tokens * inputs).map(|i| value(i + 11)).collect();
        let f32_weights = Values::F32(weights.clone());
        let layer = Dense::new(inputs, outputs, f32_weights, bias.clone(), Kernel::best())
            .expect("sizes fit");
        let mut out = vec![0f32; tokens * outputs];
        on_two_threads(|| layer.apply(&x, &mut out));
        assert_close(&out, &naive(&weights, &bias, inputs, &x));
    }
}

#[test]
fn int8_products_of_f32_inputs_are_those_of_the_weights_they_stand_for() {
    for (tokens, inputs, outputs) in SHAPES {
        let (int8, bias, x) = int8_case(tokens, inputs, outputs);
        let weights = int8.clone().into_f32();
        let layer =
            Dense::new(inputs, outputs, int8, bias.clone(), Kernel::FloatInputs).expect("fit");
        let mut out = vec![0f32; tokens * outputs];
        on_two_threads(|| layer.apply(&x, &mut out));
        assert_close(&out, &naive(&weights, &bias, inputs, &x));
    }
}

/// `row` as the VNNI products quantize it: each group of 64 inputs in 256 steps from its
/// lowest to its highest value, each input the step nearest it (ties to even).
fn quantized(row: &[f32]) -> Vec<f64> {
    row.chunks(64)
        .flat_map(|group| {
            let (low, high) = group
                .iter()
                .fold((f32::MAX, f32::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
            let (scale, inverse) = if high > low {
                ((high - low) / 255.0, 255.0 / (high - low))
            } else {
                (0.0, 0.0)
            };
            group.iter().map(move |v| {
                let step = ((v - low) * inverse).round_ties_even().clamp(0.0, 255.0);
                f64::from(low) + f64::from(scale) * f64::from(step)
            })
        })
        .collect()
}

/// The integer kernels this CPU can run, by name: VNNI and AVX2's pairs. A test of them fails
/// (in CI) or says it skipped the ones the CPU lacks.
#[cfg(target_arch = "x86_64")]
fn integer_kernels(test: &str) -> Vec<(&'static str, Kernel)> {
    let vnni = vnni::Vnni::detect().map(|proof| ("vnni", Kernel::Vnni(proof)));
    let pairs = pulp::x86::V3::try_new().map(|simd| ("pairs", Kernel::Pairs(simd)));
    if vnni.is_none() {
        crate::tests::cpu_lacks(test, "AVX-512 VNNI");
    }
    if pairs.is_none() {
        crate::tests::cpu_lacks(test, "AVX2");
    }
    vnni.into_iter().chain(pairs).collect()
}

/// With either integer kernel, each output is the sum over its inputs as quantized (each off by
/// at most half its group's step), but for float rounding: so VNNI and AVX2 give the same
/// vectors. The inputs lie away from 0 and one per token is forty times the others (as BERT's
/// outlier dimensions are): a range per token, or padding that widened a group's range, would
/// move outputs far past the rounding.
#[cfg(target_arch = "x86_64")]
#[test]
fn int8_products_of_int8_inputs_are_those_of_the_inputs_as_quantized() {
    let test = "int8_products_of_int8_inputs_are_those_of_the_inputs_as_quantized";
    for (name, kernel) in integer_kernels(test) {
        for (tokens, inputs, outputs) in SHAPES {
            let (int8, bias, mut x) = int8_case(tokens, inputs, outputs);
            for (token, row) in x.chunks_exact_mut(inputs).enumerate() {
                row.iter_mut().for_each(|v| *v += 2.0);
                row[(token * 5) % inputs] = 40.0;
            }
            let weights = int8.clone().into_f32();
            let layer = Dense::new(inputs, outputs, int8, bias.clone(), kernel).expect("fit");
            assert!(layer.is_int8());
            let mut out = vec![0f32; tokens * outputs];
            on_two_threads(|| layer.apply(&x, &mut out));
            for (token, row) in x.chunks_exact(inputs).enumerate() {
                let row = quantized(row);
                for ((output, w), b) in weights.chunks_exact(inputs).enumerate().zip(&bias) {
                    let terms = row.iter().zip(w).map(|(x, w)| x * f64::from(*w));
                    let (sum, size) = terms.fold((0.0, 0.0), |(s, m), t| (s + t, m + t.abs()));
                    let expected = sum + f64::from(*b);
                    let ours = f64::from(out[token * outputs + output]);
                    assert!(
                        (ours - expected).abs() <= 1e-5 * (1.0 + size),
                        "{name} ({tokens}, {inputs}, {outputs}) token {token} output {output}: \
                         {ours} vs {expected}"
                    );
                }
            }
        }
    }
}

/// BERT's hidden states have a few dimensions far larger than the rest: with one scale per
/// group of 64 inputs, such an input coarsens only its own group's steps, so where that
/// group's weights are 0 the products are exactly those without it.
#[cfg(target_arch = "x86_64")]
#[test]
fn an_outlier_input_coarsens_only_its_own_group() {
    for (name, kernel) in integer_kernels("an_outlier_input_coarsens_only_its_own_group") {
        let (tokens, inputs, outputs) = (5, 384, 33);
        let (int8, bias, x) = int8_case(tokens, inputs, outputs);
        let Values::Int8 { mut values, scales } = int8 else {
            panic!("int8_case gives int8 weights")
        };
        for row in values.chunks_exact_mut(inputs) {
            row[..64].fill(0);
        }
        let int8 = Values::Int8 { values, scales };
        let layer = Dense::new(inputs, outputs, int8, bias, kernel).expect("fits");
        let mut with_outliers = x.clone();
        for row in with_outliers.chunks_exact_mut(inputs) {
            row[3] = 40.0;
        }
        let (mut plain, mut outlying) =
            (vec![0f32; tokens * outputs], vec![0f32; tokens * outputs]);
        layer.apply(&x, &mut plain);
        layer.apply(&with_outliers, &mut outlying);
        assert_eq!(plain, outlying, "{name}");
    }
}

/// The tiles this CPU can run, not only its best.
fn tiles_here() -> Vec<TileKind> {
    #[cfg(target_arch = "x86_64")]
    let simd = [
        pulp::x86::V3::try_new().map(TileKind::Avx2),
        pulp::x86::V4::try_new().map(TileKind::Avx512),
    ];
    #[cfg(not(target_arch = "x86_64"))]
    let simd: [Option<TileKind>; 0] = [];
    std::iter::once(TileKind::Portable)
        .chain(simd.into_iter().flatten())
        .collect()
}

/// `layer`'s product of `x` run by the tile `which`, on this thread.
fn run_by(which: TileKind, layer: &Dense, x: &[f32]) -> Vec<f32> {
    let rows: Vec<&[f32]> = x.chunks_exact(layer.inputs).collect();
    let mut out = vec![0f32; rows.len() * layer.outputs];
    let mut outs: Vec<&mut [f32]> = out.chunks_exact_mut(layer.outputs).collect();
    let weights = match &layer.weights {
        Panels::F32(panels) => TileWeights::F32(panels),
        Panels::Int8(panels) => TileWeights::Int8(panels),
        #[cfg(target_arch = "x86_64")]
        Panels::Quads(_) | Panels::Pairs(_) => panic!("f32 inputs were asked for"),
    };
    let product = Product {
        layer,
        x: &rows,
        range: 0..layer.outputs.div_ceil(PANEL),
        out: &mut outs,
    };
    which.run(product, weights);
    out
}

/// Every tile the CPU can run, not only its best, gives the products of f32 and of int8
/// weights at every shape (on one thread: the split is `apply`'s).
#[test]
fn every_tile_gives_the_same_products() {
    let tiles = tiles_here();
    #[cfg(target_arch = "x86_64")]
    if !tiles.iter().any(|tile| matches!(tile, TileKind::Avx512(_))) {
        crate::tests::cpu_lacks("every_tile_gives_the_same_products", "AVX-512");
    }
    for (tokens, inputs, outputs) in SHAPES {
        let (int8, bias, x) = int8_case(tokens, inputs, outputs);
        let f32_weights = Values::F32((0..inputs * outputs).map(value).collect());
        for weights in [f32_weights, int8] {
            let plain = naive(&weights.clone().into_f32(), &bias, inputs, &x);
            let layer = Dense::new(inputs, outputs, weights, bias.clone(), Kernel::FloatInputs)
                .expect("fits");
            for which in &tiles {
                let out = run_by(*which, &layer, &x);
                assert_close(&out, &plain);
            }
        }
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
    let kernel = Kernel::best();
    let dense = |inputs, outputs, weights, bias| Dense::new(inputs, outputs, weights, bias, kernel);
    assert!(dense(4, 2, Values::F32(vec![0.0; 7]), vec![0.0; 2]).is_none());
    assert!(dense(4, 2, Values::F32(vec![0.0; 8]), vec![0.0; 3]).is_none());
    let int8 = Values::Int8 {
        values: vec![0; 8],
        scales: vec![1.0],
    };
    assert!(dense(4, 2, int8, vec![0.0; 2]).is_none());
    assert!(dense(0, 0, Values::F32(Vec::new()), Vec::new()).is_none());
}
