//! Tool embeddings for hybrid search, kept so that a restart does not embed the catalog again.
//! Keyed by the model's identity and a hash of the embedded text; vectors are little-endian
//! `f32`s. Only one model's rows are kept: loading a model forgets every other model's.

use crate::sql::{Mode, Param};
use crate::{StateError, Store};

/// One stored embedding: the hash of the embedded text and its vector.
pub type Embedding = (Vec<u8>, Vec<f32>);

impl Store {
    /// Every embedding kept for `model`; rows of any other model are deleted.
    pub fn load_embeddings(&self, model: &str) -> Result<Vec<Embedding>, StateError> {
        let rows = self.db.transaction(Mode::Write, |tx| {
            tx.execute(
                "DELETE FROM embeddings WHERE model <> ?1",
                &[Param::Text(model)],
            )?;
            tx.query(
                "SELECT passage, vector FROM embeddings WHERE model = ?1",
                &[Param::Text(model)],
            )
        })?;
        Ok(rows
            .iter()
            .filter_map(|row| Some((row.bytes(0).ok()?, decode(&row.bytes(1).ok()?)?)))
            .collect())
    }

    /// Adds (or replaces) embeddings of `model`.
    pub fn save_embeddings(&self, model: &str, rows: &[(&[u8], &[f32])]) -> Result<(), StateError> {
        self.db.transaction(Mode::Write, |tx| {
            for (passage, vector) in rows {
                tx.execute(
                    "INSERT INTO embeddings (model, passage, vector) VALUES (?1, ?2, ?3)
                     ON CONFLICT (model, passage) DO UPDATE SET vector = ?3",
                    &[
                        Param::Text(model),
                        Param::Bytes(passage),
                        Param::Bytes(&encode(vector)),
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// Deletes the embeddings of `model` whose passage is not in `keep`.
    pub fn retain_embeddings(&self, model: &str, keep: &[&[u8]]) -> Result<(), StateError> {
        let keep: std::collections::HashSet<&[u8]> = keep.iter().copied().collect();
        self.db.transaction(Mode::Write, |tx| {
            let stored = tx.query(
                "SELECT passage FROM embeddings WHERE model = ?1",
                &[Param::Text(model)],
            )?;
            for row in stored {
                let passage = row.bytes(0)?;
                if !keep.contains(passage.as_slice()) {
                    tx.execute(
                        "DELETE FROM embeddings WHERE model = ?1 AND passage = ?2",
                        &[Param::Text(model), Param::Bytes(&passage)],
                    )?;
                }
            }
            Ok(())
        })
    }
}

fn encode(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `None` for a blob that is not a whole number of `f32`s (a damaged row is skipped, and the
/// tool embedded again).
fn decode(bytes: &[u8]) -> Option<Vec<f32>> {
    let chunks = bytes.chunks_exact(4);
    if !chunks.remainder().is_empty() {
        return None;
    }
    Some(
        chunks
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}
