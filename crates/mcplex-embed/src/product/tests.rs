//! The products against the plain sum in f64: every tile (portable, AVX2, AVX-512, VNNI) at
//! shapes that leave every remainder, and the VNNI products' quantization error bounded.

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
        layer.apply(&x, &mut out);
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
        layer.apply(&x, &mut out);
        assert_close(&out, &naive(&weights, &bias, inputs, &x));
    }
}

/// With VNNI, each token's inputs are int8 steps of one scale per group of 64: every input
/// is off by at most half its group's step, so each output by at most the sum, over the
/// groups, of half the step times the group's weights' magnitudes. One input per token is
/// forty times the others (as BERT's outlier dimensions are): a scale per token instead of
/// per group would give the other groups' outputs errors past that bound.
#[cfg(target_arch = "x86_64")]
#[test]
fn int8_products_of_int8_inputs_are_off_by_at_most_half_a_step_of_each_group() {
    let Some(vnni) = vnni::Vnni::detect() else {
        eprintln!("this CPU has no AVX-512 VNNI: its products are not run here");
        return;
    };
    for (tokens, inputs, outputs) in SHAPES {
        let (int8, bias, mut x) = int8_case(tokens, inputs, outputs);
        for (token, row) in x.chunks_exact_mut(inputs).enumerate() {
            row[(token * 5) % inputs] = 40.0;
        }
        let weights = int8.clone().into_f32();
        let layer =
            Dense::new(inputs, outputs, int8, bias.clone(), Kernel::Vnni(vnni)).expect("fit");
        assert!(layer.is_int8());
        let mut out = vec![0f32; tokens * outputs];
        layer.apply(&x, &mut out);
        let plain = naive(&weights, &bias, inputs, &x);
        for (token, row) in x.chunks_exact(inputs).enumerate() {
            for (output, w) in weights.chunks_exact(inputs).enumerate() {
                let bound: f64 = row
                    .chunks(64)
                    .zip(w.chunks(64))
                    .map(|(values, w)| {
                        let (low, high) = values
                            .iter()
                            .fold((f32::MAX, f32::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
                        let half_step = f64::from(high - low) / 510.0;
                        half_step * w.iter().map(|w| f64::from(w.abs())).sum::<f64>()
                    })
                    .sum();
                let at = token * outputs + output;
                let error = (f64::from(out[at]) - plain[at]).abs();
                let allowed = bound * 1.001 + 1e-4 * (1.0 + plain[at].abs());
                assert!(
                    error <= allowed,
                    "({tokens}, {inputs}, {outputs}) token {token} output {output}: \
                     {} vs {}, off by {error} > {allowed}",
                    out[at],
                    plain[at]
                );
            }
        }
    }
}

/// BERT's hidden states have a few dimensions far larger than the rest: with one scale per
/// group of 64 inputs, such an input coarsens only its own group's steps, so where that
/// group's weights are 0 the products are those without it (but for float rounding: the
/// unsigned weights' `+ 128` is added with the group's scale and taken off after).
#[cfg(target_arch = "x86_64")]
#[test]
fn an_outlier_input_coarsens_only_its_own_group() {
    let Some(vnni) = vnni::Vnni::detect() else {
        eprintln!("this CPU has no AVX-512 VNNI: its products are not run here");
        return;
    };
    let (tokens, inputs, outputs) = (5, 384, 33);
    let (int8, bias, x) = int8_case(tokens, inputs, outputs);
    let Values::Int8 { mut values, scales } = int8 else {
        panic!("int8_case gives int8 weights")
    };
    for row in values.chunks_exact_mut(inputs) {
        row[..64].fill(0);
    }
    let int8 = Values::Int8 { values, scales };
    let layer = Dense::new(inputs, outputs, int8, bias, Kernel::Vnni(vnni)).expect("fits");
    let mut with_outliers = x.clone();
    for row in with_outliers.chunks_exact_mut(inputs) {
        row[3] = 40.0;
    }
    let (mut plain, mut outlying) = (vec![0f32; tokens * outputs], vec![0f32; tokens * outputs]);
    layer.apply(&x, &mut plain);
    layer.apply(&with_outliers, &mut outlying);
    for (plain, outlying) in plain.iter().zip(&outlying) {
        let error = (plain - outlying).abs();
        assert!(error <= 1e-5 * (1.0 + plain.abs()), "{plain} vs {outlying}");
    }
}

/// Which tile a product is run by, whatever the CPU's best is.
#[derive(Clone, Copy, Debug)]
enum Which {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

/// The tiles this CPU can run.
fn tiles_here() -> Vec<Which> {
    let mut tiles = vec![Which::Portable];
    #[cfg(target_arch = "x86_64")]
    {
        if pulp::x86::V3::try_new().is_some() {
            tiles.push(Which::Avx2);
        }
        if pulp::x86::V4::try_new().is_some() {
            tiles.push(Which::Avx512);
        }
    }
    tiles
}

/// `layer`'s product of `x` run by the tile `which`.
fn run_by(which: Which, layer: &Dense, x: &[f32]) -> Vec<f32> {
    let rows: Vec<&[f32]> = x.chunks_exact(layer.inputs).collect();
    let mut out = vec![0f32; rows.len() * layer.outputs];
    let mut outs: Vec<&mut [f32]> = out.chunks_exact_mut(layer.outputs).collect();
    let weights = match &layer.weights {
        Panels::F32(panels) => TileWeights::F32(panels),
        Panels::Int8(panels) => TileWeights::Int8(panels),
        #[cfg(target_arch = "x86_64")]
        Panels::Quads(_) => panic!("f32 inputs were asked for"),
    };
    let product = Product {
        layer,
        x: &rows,
        range: 0..layer.outputs.div_ceil(PANEL),
        out: &mut outs,
    };
    match which {
        Which::Portable => product.run(Portable, weights),
        #[cfg(target_arch = "x86_64")]
        Which::Avx2 => {
            let simd = pulp::x86::V3::try_new().expect("tiles_here checked");
            let run = avx2::Run {
                simd,
                product,
                weights,
            };
            pulp::Simd::vectorize(simd, run);
        }
        #[cfg(target_arch = "x86_64")]
        Which::Avx512 => {
            let simd = pulp::x86::V4::try_new().expect("tiles_here checked");
            let run = avx512::Run {
                simd,
                product,
                weights,
            };
            pulp::Simd::vectorize(simd, run);
        }
    }
    out
}

/// Every tile the CPU can run, not only its best, gives the products of f32 and of int8
/// weights at every shape (on one thread: the split is `apply`'s).
#[test]
fn every_tile_gives_the_same_products() {
    let tiles = tiles_here();
    #[cfg(target_arch = "x86_64")]
    assert!(
        tiles.len() > 1,
        "an x86-64 CPU without AVX2: only the portable tile was run"
    );
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
