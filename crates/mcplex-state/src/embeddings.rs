//! Tool embeddings for hybrid search, kept so that a restart does not embed the catalog again.
//! Keyed by the model's identity and a hash of the embedded text; vectors are little-endian
//! `f32`s. Only one model's rows are kept: loading a model forgets every other model's.

use rusqlite::params;

use crate::{StateError, Store};

/// One stored embedding: the hash of the embedded text and its vector.
pub type Embedding = (Vec<u8>, Vec<f32>);

impl Store {
    /// Every embedding kept for `model`; rows of any other model are deleted.
    pub fn load_embeddings(&self, model: &str) -> Result<Vec<Embedding>, StateError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        tx.execute("DELETE FROM embeddings WHERE model <> ?1", params![model])?;
        let rows = {
            let mut select =
                tx.prepare("SELECT passage, vector FROM embeddings WHERE model = ?1")?;
            let rows = select.query_map(params![model], |row| {
                let passage: Vec<u8> = row.get(0)?;
                let vector: Vec<u8> = row.get(1)?;
                Ok((passage, vector))
            })?;
            rows.filter_map(Result::ok)
                .filter_map(|(passage, bytes)| Some((passage, decode(&bytes)?)))
                .collect()
        };
        tx.commit()?;
        Ok(rows)
    }

    /// Adds (or replaces) embeddings of `model`.
    pub fn save_embeddings(&self, model: &str, rows: &[(&[u8], &[f32])]) -> Result<(), StateError> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare(
                "INSERT OR REPLACE INTO embeddings (model, passage, vector) VALUES (?1, ?2, ?3)",
            )?;
            for (passage, vector) in rows {
                insert.execute(params![model, passage, encode(vector)])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Deletes the embeddings of `model` whose passage is not in `keep`.
    pub fn retain_embeddings(&self, model: &str, keep: &[&[u8]]) -> Result<(), StateError> {
        let keep: std::collections::HashSet<&[u8]> = keep.iter().copied().collect();
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let stored: Vec<Vec<u8>> = {
            let mut select = tx.prepare("SELECT passage FROM embeddings WHERE model = ?1")?;
            let rows = select.query_map(params![model], |row| row.get(0))?;
            rows.filter_map(Result::ok).collect()
        };
        {
            let mut delete =
                tx.prepare("DELETE FROM embeddings WHERE model = ?1 AND passage = ?2")?;
            for passage in stored.iter().filter(|p| !keep.contains(p.as_slice())) {
                delete.execute(params![model, passage])?;
            }
        }
        tx.commit()?;
        Ok(())
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
