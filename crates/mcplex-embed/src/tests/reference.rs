//! The hand-written forward pass against candle's `BertModel` (with the mean pooling this crate
//! used to do on candle) on the same weights: every passage of the ref45 catalog and every query
//! of its golden set, alone and in one batch. Ours computes with f32 inputs, as candle does; the
//! int8 inputs of the VNNI products are measured against f32 inputs in `tests.rs`.

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use mcplex_search::Embedder;
use tokenizers::{PaddingParams, Tokenizer};

use crate::{SentenceEncoder, builtin, compact};

/// candle's encoder of the built-in model, padding a batch as the old code did.
struct Candle {
    model: BertModel,
    tokenizer: Tokenizer,
}

impl Candle {
    fn builtin() -> Candle {
        let config: Config = serde_json::from_slice(builtin::CONFIG).expect("config");
        let tensors = compact::read_tensors(builtin::WEIGHTS)
            .expect("weights")
            .into_iter()
            .map(|(name, compact::Tensor { shape, values })| {
                let values = values.into_f32();
                let tensor = Tensor::from_vec(values, shape, &Device::Cpu).expect("tensor");
                (name, tensor)
            })
            .collect();
        let weights = VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
        let model = BertModel::load(weights, &config).expect("candle loads the model");
        let mut tokenizer =
            crate::tokenizer(builtin::TOKENIZER, crate::MAX_TOKENS).expect("tokenizer");
        tokenizer.with_padding(Some(PaddingParams::default()));
        Candle { model, tokenizer }
    }

    fn embed(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .expect("tokenizes");
        let rows = |pick: &dyn Fn(&tokenizers::Encoding) -> &[u32]| {
            let rows: Vec<Tensor> = encodings
                .iter()
                .map(|e| Tensor::new(pick(e), &Device::Cpu).expect("row"))
                .collect();
            Tensor::stack(&rows, 0).expect("stack")
        };
        let ids = rows(&|e| e.get_ids());
        let mask = rows(&|e| e.get_attention_mask());
        let types = ids.zeros_like().expect("types");
        let hidden = self
            .model
            .forward(&ids, &types, Some(&mask))
            .expect("forward");
        let pooled = || -> candle_core::Result<Vec<Vec<f32>>> {
            let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
            let mean = summed.broadcast_div(&mask.sum(1)?.clamp(1e-9, f64::MAX)?)?;
            let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
            mean.broadcast_div(&norm)?.to_vec2::<f32>()
        };
        pooled().expect("pooling")
    }
}

fn texts() -> Vec<String> {
    let golden: serde_json::Value = serde_json::from_str(include_str!(
        "../../../mcplex-fixtures/data/ref45.golden.json"
    ))
    .expect("golden set");
    let queries = golden["queries"]
        .as_array()
        .expect("queries")
        .iter()
        .filter_map(|q| q["query"].as_str().map(str::to_owned));
    let passages = mcplex_fixtures::ref45().into_iter().map(|tool| {
        let description = tool.definition["description"].as_str().unwrap_or_default();
        format!(
            "{}: {description}",
            tool.definition["name"].as_str().unwrap_or_default()
        )
    });
    let long = "search the web and summarise every page it finds ".repeat(40);
    queries
        .chain(passages)
        .chain(["", "x", "Ünïcödé ✓ 東京", long.as_str()].map(str::to_owned))
        .collect()
}

fn assert_close(ours: &[f32], theirs: &[f32], text: &str) {
    assert_eq!(ours.len(), theirs.len(), "{text:?}");
    let largest = ours
        .iter()
        .zip(theirs)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(largest < 1e-4, "{text:?}: components differ by {largest}");
}

#[test]
fn the_forward_pass_gives_candles_vectors_alone_and_in_a_batch() {
    let (ours, candle) = (
        SentenceEncoder::builtin_with(crate::Kernel::FloatInputs).expect("loads"),
        Candle::builtin(),
    );
    let texts = texts();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    assert!(refs.len() > 90, "queries and passages: {}", refs.len());
    let batched = ours.embed(&refs).expect("embeds");
    for (chunk, vectors) in refs.chunks(16).zip(batched.chunks(16)) {
        for ((text, theirs), batch) in chunk.iter().zip(candle.embed(chunk)).zip(vectors) {
            assert_close(batch, &theirs, text);
            let alone = ours.embed(&[text]).expect("embeds");
            assert_close(&alone[0], &theirs, text);
        }
    }
}
