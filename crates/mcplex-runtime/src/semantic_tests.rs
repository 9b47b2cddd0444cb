//! The embedding worker with a toy model: each text once across snapshots, embeddings loaded
//! from a store instead of recomputed, plain BM25F whenever the model fails, and the last
//! failure kept until a pass succeeds.

use mcplex_protocol::ServerHealth;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcplex_catalog::{
    BuildInput, CatalogCache, EmbedError, Embedder, Snapshot, UpstreamTools, build_snapshot,
};
use mcplex_config::{Config, HotSettings, ServerConfig, Transport};
use serde_json::{Value, json};

use crate::semantic::{EmbeddingStore, PassageKey, SemanticSearch};

/// Hashes words into 16 dimensions; counts the texts it embeds; fails on demand, at length
/// when `loud`.
#[derive(Default)]
struct ToyModel {
    embedded: AtomicUsize,
    failing: AtomicBool,
    loud: AtomicBool,
}

impl Embedder for ToyModel {
    fn model(&self) -> &str {
        "toy"
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.failing.load(Ordering::SeqCst) {
            let times = if self.loud.load(Ordering::SeqCst) {
                1000
            } else {
                1
            };
            return Err(EmbedError("the toy model is broken".repeat(times)));
        }
        self.embedded.fetch_add(texts.len(), Ordering::SeqCst);
        Ok(texts
            .iter()
            .map(|text| {
                let mut vector = [0f32; 16];
                for word in text.split_whitespace() {
                    vector[word.bytes().map(usize::from).sum::<usize>() % 16] += 1.0;
                }
                let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                vector.iter().map(|x| x / norm).collect()
            })
            .collect())
    }
}

#[derive(Default)]
struct MemoryStore(Mutex<HashMap<PassageKey, Vec<f32>>>);

impl EmbeddingStore for MemoryStore {
    fn load(
        &self,
        _model: &str,
    ) -> Result<Vec<(PassageKey, Vec<f32>)>, crate::EmbeddingStoreError> {
        Ok(self
            .0
            .lock()
            .map_err(|e| e.to_string())?
            .clone()
            .into_iter()
            .collect())
    }
    fn save(
        &self,
        _model: &str,
        embeddings: &[(PassageKey, Vec<f32>)],
    ) -> Result<(), crate::EmbeddingStoreError> {
        self.0
            .lock()
            .map_err(|e| e.to_string())?
            .extend(embeddings.iter().cloned());
        Ok(())
    }
    fn retain(&self, _model: &str, keep: &[PassageKey]) -> Result<(), crate::EmbeddingStoreError> {
        self.0
            .lock()
            .map_err(|e| e.to_string())?
            .retain(|key, _| keep.contains(key));
        Ok(())
    }
}

fn snapshot(tools: &[(&str, &str)]) -> Snapshot {
    let tools: Vec<Value> = tools
        .iter()
        .map(|(name, description)| {
            json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
        })
        .collect();
    let config = Config::with_servers(vec![ServerConfig::new(
        "s".to_owned(),
        Transport::Builtin {
            kind: "corpus".to_owned(),
        },
    )]);
    let upstreams = BTreeMap::from([(
        "s".to_owned(),
        UpstreamTools {
            status: ServerHealth::Ready,
            tools: Arc::new(tools),
            offer: Arc::default(),
        },
    )]);
    let input = BuildInput {
        config: &config,
        hot: HotSettings::default(),
        generation: 1,
        approvals: None,
    };
    build_snapshot(input, &upstreams, &mut CatalogCache::default()).snapshot
}

const TWO: [(&str, &str); 2] = [("read_file", "Read a file."), ("git_log", "Show commits.")];

#[test]
fn each_text_is_embedded_once_however_many_snapshots_hold_it() {
    let model = Arc::new(ToyModel::default());
    let semantic = SemanticSearch::start(model.clone(), None).expect("worker");
    let first = snapshot(&TWO);
    semantic.embed_now(&first).expect("embeds");
    assert!(first.has_vectors());
    let mut three = TWO.to_vec();
    three.push(("get_time", "Tell the time."));
    let second = snapshot(&three);
    semantic.embed_now(&second).expect("embeds");
    assert!(second.has_vectors());
    assert_eq!(
        model.embedded.load(Ordering::SeqCst),
        3,
        "2, then only the new one"
    );
}

#[test]
fn kept_embeddings_are_loaded_not_recomputed() {
    let store = Arc::new(MemoryStore::default());
    let first_model = Arc::new(ToyModel::default());
    let first = SemanticSearch::start(first_model.clone(), Some(store.clone())).expect("worker");
    first.embed_now(&snapshot(&TWO)).expect("embeds");
    assert_eq!(store.0.lock().expect("store").len(), 2, "saved as embedded");

    // A new process: the worker loads the store before it embeds anything.
    let model = Arc::new(ToyModel::default());
    let semantic = SemanticSearch::start(model.clone(), Some(store)).expect("worker");
    let restarted = Arc::new(snapshot(&TWO));
    semantic.embed_later(restarted.clone());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !restarted.has_vectors() {
        assert!(
            Instant::now() < deadline,
            "the worker never attached vectors"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(model.embedded.load(Ordering::SeqCst), 0);
}

/// The worker's last failure is kept for the operator until a pass succeeds.
#[test]
fn the_last_failed_pass_is_said_until_one_succeeds() {
    let model = Arc::new(ToyModel::default());
    model.failing.store(true, Ordering::SeqCst);
    let semantic = SemanticSearch::start(model.clone(), None).expect("worker");
    assert_eq!(semantic.embedding_failure(), None, "no pass yet");
    let until = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "never: {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    semantic.embed_later(Arc::new(snapshot(&TWO)));
    until("the failure said", &|| {
        semantic.embedding_failure().is_some()
    });
    assert!(
        semantic
            .embedding_failure()
            .is_some_and(|why| why.contains("the toy model is broken")),
        "{:?}",
        semantic.embedding_failure()
    );
    // However long the model's words, the operator gets a bounded part of them.
    model.loud.store(true, Ordering::SeqCst);
    semantic.embed_later(Arc::new(snapshot(&TWO)));
    until("the loud failure said", &|| {
        semantic
            .embedding_failure()
            .is_some_and(|why| why.len() > "the toy model is broken".len() * 2)
    });
    assert!(
        semantic
            .embedding_failure()
            .is_some_and(|why| why.chars().count() == 500),
        "capped: {:?}",
        semantic.embedding_failure().map(|why| why.len())
    );
    model.failing.store(false, Ordering::SeqCst);
    let mended = Arc::new(snapshot(&TWO));
    semantic.embed_later(mended.clone());
    until("the mended pass", &|| mended.has_vectors());
    until("the failure forgotten", &|| {
        semantic.embedding_failure().is_none()
    });
}

#[tokio::test]
async fn a_failing_model_leaves_search_plain_bm25() {
    let model = Arc::new(ToyModel::default());
    model.failing.store(true, Ordering::SeqCst);
    let semantic = SemanticSearch::start(model.clone(), None).expect("worker");
    let broken = snapshot(&TWO);
    assert!(semantic.embed_now(&broken).is_err());
    assert!(!broken.has_vectors(), "no vectors: every search is BM25F");
    assert!(semantic.embed_query("read a file").is_err());
    let plain = broken.search("read a file", Some(&[1.0; 16]), None, 5, |_| true);
    assert_eq!(
        plain
            .tools
            .iter()
            .map(|found| found.tool.display_name.as_str())
            .collect::<Vec<_>>(),
        ["s__read_file"],
        "a query vector without tool vectors changes nothing"
    );
}
