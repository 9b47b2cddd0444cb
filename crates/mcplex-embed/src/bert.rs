//! A BERT encoder's forward pass written for sentence embedding: the texts of a call packed one
//! after the other with no padding (the dense layers run on all their tokens at once, attention
//! within each text), then each text's tokens averaged and scaled to unit length. Gives the
//! vectors of candle's `BertModel` with mean pooling within float rounding (a test compares them
//! on many texts), without a tensor library's cost per operation, which dominates for a query's
//! dozen tokens.
//!
//! Owns: `config.json`'s fields that shape the model, the weights by their Hugging Face names,
//! and the layer sequence. Must not: tokenize or know where the weights came from (`lib.rs`).

use serde_json::Value;

use crate::compact::{Tensor, Tensors, Values};
use crate::error::BertError;
use crate::kernels::{Activation, activate, attention, layer_norm};
use crate::product::{Dense, Kernel};

/// The fields of a BERT `config.json` the forward pass needs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Config {
    pub hidden: usize,
    pub heads: usize,
    pub layers: usize,
    pub intermediate: usize,
    pub positions: usize,
    pub epsilon: f32,
    pub activation: Activation,
}

impl Config {
    /// Reads `config.json`; what this pass cannot run (another position embedding, another
    /// activation) is refused by name.
    pub fn parse(bytes: &[u8]) -> Result<Config, BertError> {
        let json: Value = serde_json::from_slice(bytes)?;
        let size = |key: &str| {
            json[key]
                .as_u64()
                .and_then(|v| usize::try_from(v).ok())
                .filter(|v| *v > 0)
                .ok_or_else(|| BertError::Size(key.to_owned()))
        };
        let activation = match json["hidden_act"].as_str().unwrap_or("gelu") {
            "gelu" => Activation::Gelu,
            "gelu_new" | "gelu_approximate" | "gelu_pytorch_tanh" => Activation::GeluTanh,
            "relu" => Activation::Relu,
            other => return Err(BertError::Activation(other.to_owned())),
        };
        match json["position_embedding_type"].as_str() {
            None | Some("absolute") => {}
            Some(other) => {
                return Err(BertError::PositionEmbedding(other.to_owned()));
            }
        }
        match json["model_type"].as_str() {
            None | Some("bert") => {}
            // Other families (RoBERTa numbers its positions from its padding index) would give
            // wrong vectors without an error.
            Some(other) => {
                return Err(BertError::ModelType(other.to_owned()));
            }
        }
        let epsilon = json["layer_norm_eps"].as_f64().unwrap_or(1e-12) as f32;
        if !(epsilon.is_finite() && epsilon > 0.0) {
            return Err(BertError::Epsilon);
        }
        let config = Config {
            hidden: size("hidden_size")?,
            heads: size("num_attention_heads")?,
            layers: size("num_hidden_layers")?,
            intermediate: size("intermediate_size")?,
            positions: size("max_position_embeddings")?,
            epsilon,
            activation,
        };
        if !config.hidden.is_multiple_of(config.heads) {
            return Err(BertError::Heads);
        }
        Ok(config)
    }
}

struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    /// Query, key and value in one product (their rows stacked).
    qkv: Dense,
    attention_out: Dense,
    attention_norm: Norm,
    intermediate: Dense,
    output: Dense,
    output_norm: Norm,
}

/// A loaded encoder.
pub(crate) struct Bert {
    config: Config,
    /// One row per token id (int8 in the built-in model, read a row at a time).
    words: Values,
    /// Position embeddings with the token-type-0 embedding already added (every text here is
    /// one segment).
    positions: Vec<f32>,
    embeddings_norm: Norm,
    layers: Vec<Layer>,
}

impl Bert {
    /// The encoder of `config` from `tensors` (named as Hugging Face's BERT names them, with or
    /// without a `bert.` prefix). Int8 matrices stay int8, laid out for `kernel`.
    pub fn load(config: Config, tensors: Tensors, kernel: Kernel) -> Result<Bert, BertError> {
        let prefix = ["", "bert."]
            .into_iter()
            .find(|p| tensors.contains_key(&format!("{p}embeddings.word_embeddings.weight")))
            .ok_or(BertError::NoEmbeddings)?
            .to_owned();
        let mut weights = Weights {
            tensors,
            prefix,
            kernel,
        };
        let (hidden, intermediate) = (config.hidden, config.intermediate);
        let words = weights.take("embeddings.word_embeddings.weight", &[None, Some(hidden)])?;
        let mut positions = weights
            .take(
                "embeddings.position_embeddings.weight",
                &[Some(config.positions), Some(hidden)],
            )?
            .into_f32();
        let types = weights
            .take(
                "embeddings.token_type_embeddings.weight",
                &[None, Some(hidden)],
            )?
            .into_f32();
        for row in positions.chunks_exact_mut(hidden) {
            row.iter_mut().zip(&types).for_each(|(p, t)| *p += t);
        }
        let embeddings_norm = weights.norm("embeddings.LayerNorm", hidden)?;
        let layers = (0..config.layers)
            .map(|i| weights.layer(i, hidden, intermediate))
            .collect::<Result<Vec<_>, BertError>>()?;
        Ok(Bert {
            config,
            words,
            positions,
            embeddings_norm,
            layers,
        })
    }

    /// The unit-length mean of each text's last hidden states; `texts` are token ids, each
    /// text at most as long as the position embeddings (longer ones are cut).
    pub fn embed(&self, texts: &[&[u32]]) -> Vec<Vec<f32>> {
        let hidden = self.config.hidden;
        let texts: Vec<&[u32]> = texts
            .iter()
            .map(|ids| &ids[..ids.len().min(self.config.positions)])
            .collect();
        let mut states = self.embeddings(&texts);
        for layer in &self.layers {
            states = self.layer(layer, &texts, &states);
        }
        let mut vectors = Vec::with_capacity(texts.len());
        let mut rows = states.chunks_exact(hidden);
        for ids in &texts {
            let mut mean = vec![0f32; hidden];
            for row in rows.by_ref().take(ids.len()) {
                mean.iter_mut().zip(row).for_each(|(m, v)| *m += v);
            }
            let count = ids.len().max(1) as f32;
            mean.iter_mut().for_each(|m| *m /= count);
            let length = mean.iter().map(|m| m * m).sum::<f32>().sqrt().max(1e-12);
            mean.iter_mut().for_each(|m| *m /= length);
            vectors.push(mean);
        }
        vectors
    }

    /// How many token ids the word embeddings have rows for.
    pub fn vocabulary(&self) -> usize {
        self.words.len() / self.config.hidden
    }

    /// Whether the word embeddings and every dense layer are kept int8.
    #[cfg(test)]
    pub fn stays_int8(&self) -> bool {
        matches!(self.words, Values::Int8 { .. })
            && self.layers.iter().all(|layer| {
                [
                    &layer.qkv,
                    &layer.attention_out,
                    &layer.intermediate,
                    &layer.output,
                ]
                .iter()
                .all(|dense| dense.is_int8())
            })
    }

    /// How many tokens a text may have (its position embeddings).
    pub fn max_tokens(&self) -> usize {
        self.config.positions
    }

    /// Word + position (+ token type 0) embeddings of every token, normalised.
    fn embeddings(&self, texts: &[&[u32]]) -> Vec<f32> {
        let hidden = self.config.hidden;
        let tokens = texts.iter().map(|t| t.len()).sum::<usize>();
        let mut states = vec![0f32; tokens * hidden];
        let mut rows = states.chunks_exact_mut(hidden);
        for ids in texts {
            for ((position, id), row) in ids.iter().enumerate().zip(rows.by_ref()) {
                // `fits` makes every id the tokenizer gives a row; row 0 ([PAD]) otherwise.
                if !self.words.row_into(*id as usize, row) {
                    self.words.row_into(0, row);
                }
                let place = &self.positions[position * hidden..][..hidden];
                row.iter_mut().zip(place).for_each(|(w, p)| *w += p);
            }
        }
        let norm = &self.embeddings_norm;
        layer_norm(&mut states, &norm.weight, &norm.bias, self.config.epsilon);
        states
    }

    /// One encoder layer over the packed tokens of `texts`.
    fn layer(&self, layer: &Layer, texts: &[&[u32]], states: &[f32]) -> Vec<f32> {
        let (hidden, epsilon) = (self.config.hidden, self.config.epsilon);
        let tokens = states.len() / hidden;
        let mut qkv = vec![0f32; tokens * 3 * hidden];
        layer.qkv.apply(states, &mut qkv);
        let mut context = vec![0f32; tokens * hidden];
        let mut start = 0;
        for ids in texts {
            let end = start + ids.len();
            attention(
                &qkv[start * 3 * hidden..end * 3 * hidden],
                hidden,
                self.config.heads,
                &mut context[start * hidden..end * hidden],
            );
            start = end;
        }
        let mut attended = vec![0f32; tokens * hidden];
        layer.attention_out.apply(&context, &mut attended);
        attended.iter_mut().zip(states).for_each(|(a, s)| *a += s);
        let norm = &layer.attention_norm;
        layer_norm(&mut attended, &norm.weight, &norm.bias, epsilon);
        let mut inner = vec![0f32; tokens * self.config.intermediate];
        layer.intermediate.apply(&attended, &mut inner);
        activate(&mut inner, self.config.activation);
        let mut out = vec![0f32; tokens * hidden];
        layer.output.apply(&inner, &mut out);
        out.iter_mut().zip(&attended).for_each(|(o, a)| *o += a);
        let norm = &layer.output_norm;
        layer_norm(&mut out, &norm.weight, &norm.bias, epsilon);
        out
    }
}

/// The rows of `parts` one after the other: int8 when they all are.
fn stack(parts: [Values; 3]) -> Values {
    if parts.iter().all(|m| matches!(m, Values::Int8 { .. })) {
        let (mut values, mut scales) = (Vec::new(), Vec::new());
        for part in parts {
            if let Values::Int8 {
                values: v,
                scales: s,
            } = part
            {
                values.extend(v);
                scales.extend(s);
            }
        }
        return Values::Int8 { values, scales };
    }
    Values::F32(parts.into_iter().flat_map(Values::into_f32).collect())
}

/// The tensors not yet taken, by name without the model's prefix.
struct Weights {
    tensors: Tensors,
    prefix: String,
    kernel: Kernel,
}

impl Weights {
    /// The tensor `name`, whose shape must match `shape` (`None`: any size).
    fn take(&mut self, name: &str, shape: &[Option<usize>]) -> Result<Values, BertError> {
        let full = format!("{}{name}", self.prefix);
        let Tensor {
            shape: found,
            values,
        } = self
            .tensors
            .remove(&full)
            .ok_or_else(|| BertError::MissingTensor(full.clone()))?;
        let fits = found.len() == shape.len()
            && found
                .iter()
                .zip(shape)
                .all(|(f, s)| s.is_none_or(|s| s == *f))
            && found.iter().all(|f| *f > 0);
        if !fits {
            return Err(BertError::Shape {
                name: full,
                found,
                expected: shape.to_vec(),
            });
        }
        Ok(values)
    }

    /// Encoder layer `i`.
    fn layer(&mut self, i: usize, hidden: usize, intermediate: usize) -> Result<Layer, BertError> {
        let at = |name: &str| format!("encoder.layer.{i}.{name}");
        let [query, key, value] = ["query", "key", "value"]
            .map(|part| self.matrix(&at(&format!("attention.self.{part}")), hidden, hidden));
        let (query, key, value) = (query?, key?, value?);
        let qkv = Dense::new(
            hidden,
            3 * hidden,
            stack([query.0, key.0, value.0]),
            [query.1, key.1, value.1].concat(),
            self.kernel,
        )
        .ok_or_else(|| BertError::Stack(at("attention.self")))?;
        Ok(Layer {
            qkv,
            attention_out: self.dense(&at("attention.output.dense"), hidden, hidden)?,
            attention_norm: self.norm(&at("attention.output.LayerNorm"), hidden)?,
            intermediate: self.dense(&at("intermediate.dense"), hidden, intermediate)?,
            output: self.dense(&at("output.dense"), intermediate, hidden)?,
            output_norm: self.norm(&at("output.LayerNorm"), hidden)?,
        })
    }

    /// A dense layer's weights (`outputs` rows of `inputs`) and bias.
    fn matrix(
        &mut self,
        name: &str,
        inputs: usize,
        outputs: usize,
    ) -> Result<(Values, Vec<f32>), BertError> {
        let weights = self.take(&format!("{name}.weight"), &[Some(outputs), Some(inputs)])?;
        let bias = self.take(&format!("{name}.bias"), &[Some(outputs)])?;
        Ok((weights, bias.into_f32()))
    }

    fn dense(&mut self, name: &str, inputs: usize, outputs: usize) -> Result<Dense, BertError> {
        let (weights, bias) = self.matrix(name, inputs, outputs)?;
        Dense::new(inputs, outputs, weights, bias, self.kernel)
            .ok_or_else(|| BertError::Fill(format!("{}{name}", self.prefix)))
    }

    /// A layer norm's scale and shift (`weight`/`bias`, or `gamma`/`beta` in older files: only
    /// when the newer names are absent, so that a wrong shape is reported as such).
    fn norm(&mut self, name: &str, size: usize) -> Result<Norm, BertError> {
        let mut vector = |new: &str, old: &str| {
            let present = self
                .tensors
                .contains_key(&format!("{}{name}.{new}", self.prefix));
            let suffix = if present { new } else { old };
            self.take(&format!("{name}.{suffix}"), &[Some(size)])
                .map(Values::into_f32)
        };
        Ok(Norm {
            weight: vector("weight", "gamma")?,
            bias: vector("bias", "beta")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights(tensors: &[(&str, Vec<usize>)]) -> Weights {
        let tensors = tensors
            .iter()
            .map(|(name, shape)| {
                let values = Values::F32(vec![0.5; shape.iter().product()]);
                let shape = shape.clone();
                ((*name).to_owned(), Tensor { shape, values })
            })
            .collect();
        Weights {
            tensors,
            prefix: String::new(),
            kernel: Kernel::FloatInputs,
        }
    }

    #[test]
    fn a_layer_norm_of_the_wrong_shape_is_reported_as_such() {
        let mut wrong = weights(&[("norm.weight", vec![3]), ("norm.bias", vec![4])]);
        let error = wrong.norm("norm", 4).err().map(|e| e.to_string());
        assert_eq!(
            error.as_deref(),
            Some("norm.weight has shape [3], expected [Some(4)]")
        );
        let mut old = weights(&[("norm.gamma", vec![4]), ("norm.beta", vec![4])]);
        let norm = old.norm("norm", 4).expect("the older names are read");
        assert_eq!((norm.weight.len(), norm.bias.len()), (4, 4));
        let mut neither = weights(&[("norm.bias", vec![4])]);
        assert_eq!(
            neither
                .norm("norm", 4)
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            Some("norm.gamma is missing")
        );
    }
}
