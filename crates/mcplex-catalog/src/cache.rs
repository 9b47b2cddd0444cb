//! What survives from one snapshot to the next: signatures and validators, keyed by the content
//! hash of the schema they were compiled from, so a rebuild compiles only schemas it has not seen.

use std::collections::HashMap;
use std::sync::Arc;

use jsonschema::Validator;
use mcplex_signature::Signature;
use serde_json::Value;

use mcplex_trust::{ContentHash, content_hash};

/// Compiled artifacts per schema. Owned by whoever rebuilds snapshots; pass the same one each time.
#[derive(Default)]
pub struct CatalogCache {
    signatures: HashMap<ContentHash, Arc<Signature>>,
    validators: HashMap<ContentHash, Option<Arc<Validator>>>,
    /// Schemas whose validator did not compile (fail-open), for logs and metrics.
    pub skipped_validators: usize,
}

/// What a tool's input schema compiles to.
pub(crate) struct Compiled {
    pub hash: ContentHash,
    pub signature: Arc<Signature>,
    pub validator: Option<Arc<Validator>>,
}

impl CatalogCache {
    pub(crate) fn compiled(&mut self, schema: &Value) -> Compiled {
        let hash = content_hash(schema);
        let signature = self
            .signatures
            .entry(hash)
            .or_insert_with(|| Arc::new(mcplex_signature::compile(schema)))
            .clone();
        let validator = match self.validators.get(&hash) {
            Some(validator) => validator.clone(),
            None => {
                let validator = crate::validate::compile(schema);
                if validator.is_none() {
                    self.skipped_validators += 1;
                }
                self.validators.insert(hash, validator.clone());
                validator
            }
        };
        Compiled {
            hash,
            signature,
            validator,
        }
    }

    /// Forgets everything not used by `keep` (call after a build so the cache does not grow forever).
    pub(crate) fn retain(&mut self, keep: &std::collections::HashSet<ContentHash>) {
        self.signatures.retain(|hash, _| keep.contains(hash));
        self.validators.retain(|hash, _| keep.contains(hash));
    }
}
