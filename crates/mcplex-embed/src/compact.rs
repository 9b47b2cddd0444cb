//! The compact form of a model's weights that the binary carries: every matrix as int8 with one
//! f32 scale per row (symmetric, `scale = max |w| / 127`), everything else (biases, layer norms)
//! as f32, in one safetensors file. A quarter of the f32 file's size; the forward pass computes
//! as if each weight were `f32::from(q) * scale`, so only the rounding of each weight differs
//! from the f32 model (vectors within 1% of the f32 model's: see the tests).
//!
//! Owns: [`quantize`] (the f32 safetensors file → the compact one, how the vendored copy was
//! made) and [`read_tensors`] (a compact or plain f32 file → its tensors by name, int8 matrices
//! kept int8: the model is never built twice at load). Must not: know which model the weights
//! belong to.

use std::collections::HashMap;

use safetensors::{Dtype, SafeTensors, tensor::TensorView};

/// The suffix of the tensor holding the row scales of matrix `name`: `name` + this.
const SCALE_SUFFIX: &str = ".int8_row_scale";

/// Why a weights file could not be read or written in the compact form.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CompactError(String);

fn fail(message: impl Into<String>) -> CompactError {
    CompactError(message.into())
}

/// The f32 safetensors file `f32_file` in the compact form: rank-2 f32 tensors as int8 rows
/// with a scale each, other f32 tensors kept, tensors of other types dropped (a BERT's only one
/// is `position_ids`, which candle computes itself).
pub fn quantize(f32_file: &[u8]) -> Result<Vec<u8>, CompactError> {
    let file = SafeTensors::deserialize(f32_file).map_err(|e| fail(e.to_string()))?;
    let mut out: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = Vec::new();
    for (name, view) in file.tensors() {
        if view.dtype() != Dtype::F32 {
            continue;
        }
        let values = f32_values(view.data());
        match view.shape() {
            [rows, columns] if *columns > 0 => {
                let (quantized, scales) = quantize_rows(&values, *columns);
                out.push((name.clone(), Dtype::I8, vec![*rows, *columns], quantized));
                out.push((
                    format!("{name}{SCALE_SUFFIX}"),
                    Dtype::F32,
                    vec![*rows],
                    f32_bytes(&scales),
                ));
            }
            shape => out.push((name, Dtype::F32, shape.to_vec(), view.data().to_vec())),
        }
    }
    let views = out
        .iter()
        .map(|(name, dtype, shape, data)| {
            TensorView::new(*dtype, shape.clone(), data).map(|view| (name.clone(), view))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(e.to_string()))?;
    safetensors::serialize(views, None).map_err(|e| fail(e.to_string()))
}

/// Named tensors as a weights file holds them.
pub(crate) type Tensors = HashMap<String, Tensor>;

/// One tensor: its shape and values, row-major.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tensor {
    pub shape: Vec<usize>,
    pub values: Values,
}

/// A tensor's values as stored: f32, or (a compact file's matrices) int8 rows with a scale per
/// row, which stay so in memory and are read as `f32::from(q) * scale`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Values {
    F32(Vec<f32>),
    Int8 { values: Vec<i8>, scales: Vec<f32> },
}

impl Values {
    /// How many values (not bytes).
    pub fn len(&self) -> usize {
        match self {
            Values::F32(values) => values.len(),
            Values::Int8 { values, .. } => values.len(),
        }
    }

    /// Every value as f32.
    pub fn into_f32(self) -> Vec<f32> {
        match self {
            Values::F32(values) => values,
            Values::Int8 { values, scales } => {
                let columns = values.len().checked_div(scales.len()).unwrap_or(0).max(1);
                let mut out = vec![0f32; values.len()];
                for ((row, quantized), scale) in out
                    .chunks_exact_mut(columns)
                    .zip(values.chunks_exact(columns))
                    .zip(&scales)
                {
                    dequantize_row(quantized, *scale, row);
                }
                out
            }
        }
    }

    /// Row `row` (of `out.len()` values) as f32 into `out`; false when there is no such row.
    pub fn row_into(&self, row: usize, out: &mut [f32]) -> bool {
        let columns = out.len();
        let range = row * columns..(row + 1) * columns;
        match self {
            Values::F32(values) => match values.get(range) {
                Some(values) => out.copy_from_slice(values),
                None => return false,
            },
            Values::Int8 { values, scales } => match (values.get(range), scales.get(row)) {
                (Some(quantized), Some(scale)) => dequantize_row(quantized, *scale, out),
                _ => return false,
            },
        }
        true
    }
}

/// `f32::from(q) * scale` for each `q`: what an int8 weight stands for.
fn dequantize_row(quantized: &[i8], scale: f32, out: &mut [f32]) {
    for (o, q) in out.iter_mut().zip(quantized) {
        *o = f32::from(*q) * scale;
    }
}

/// The tensors of `file` by name: a compact file's int8 matrices with their row scales, f32
/// tensors as they are. Integer tensors (a BERT's `position_ids`) are not weights and are
/// skipped; other float types are refused.
pub(crate) fn read_tensors(file: &[u8]) -> Result<Tensors, CompactError> {
    let file = SafeTensors::deserialize(file).map_err(|e| fail(e.to_string()))?;
    let mut tensors = HashMap::new();
    for (name, view) in file.tensors() {
        let values = match view.dtype() {
            Dtype::I64 | Dtype::I32 | Dtype::U8 | Dtype::BOOL => continue,
            Dtype::F32 if name.ends_with(SCALE_SUFFIX) => continue,
            Dtype::F32 => Values::F32(f32_values(view.data())),
            Dtype::I8 => {
                let scales = file
                    .tensor(&format!("{name}{SCALE_SUFFIX}"))
                    .map_err(|_| fail(format!("{name}: int8 without its row scales")))?;
                let scales = f32_values(scales.data());
                if !matches!(view.shape(), [rows, columns] if *rows == scales.len() && *columns > 0)
                {
                    return Err(fail(format!("{name}: its row scales do not fit its rows")));
                }
                let values = view
                    .data()
                    .iter()
                    .map(|b| i8::from_le_bytes([*b]))
                    .collect();
                Values::Int8 { values, scales }
            }
            other => {
                return Err(fail(format!(
                    "{name}: {other:?} weights are not supported (convert the model to f32)"
                )));
            }
        };
        if values.len() != view.shape().iter().product::<usize>() {
            return Err(fail(format!("{name}: its values do not fill its shape")));
        }
        let shape = view.shape().to_vec();
        tensors.insert(name, Tensor { shape, values });
    }
    Ok(tensors)
}

/// Each row of the row-major `values` (rows of `columns`) as int8 steps of its own scale.
fn quantize_rows(values: &[f32], columns: usize) -> (Vec<u8>, Vec<f32>) {
    let mut quantized = Vec::with_capacity(values.len());
    let mut scales = Vec::with_capacity(values.len() / columns);
    for row in values.chunks(columns) {
        let largest = row.iter().fold(0f32, |m, w| m.max(w.abs()));
        let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
        scales.push(scale);
        quantized.extend(
            row.iter()
                .map(|w| ((w / scale).round().clamp(-127.0, 127.0) as i8).to_le_bytes()[0]),
        );
    }
    (quantized, scales)
}

fn f32_values(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int8(quantized: &[u8], scales: &[f32]) -> Values {
        Values::Int8 {
            values: quantized.iter().map(|b| i8::from_le_bytes([*b])).collect(),
            scales: scales.to_vec(),
        }
    }

    #[test]
    fn rows_come_back_within_half_a_step_of_their_scale() {
        let values = [0.5, -1.27, 0.01, 0.0, 0.0, 0.0, 3.0, 2.0, -0.001];
        let (quantized, scales) = quantize_rows(&values, 3);
        assert_eq!(scales, [0.01, 1.0, 3.0 / 127.0], "largest magnitude / 127");
        let restored = int8(&quantized, &scales).into_f32();
        for (row, (original, back)) in values.chunks(3).zip(restored.chunks(3)).enumerate() {
            for (w, r) in original.iter().zip(back) {
                assert!((w - r).abs() <= scales[row] / 2.0 + 1e-7, "{w} → {r}");
            }
        }
        assert_eq!(
            restored[3..6],
            [0.0, 0.0, 0.0],
            "an all-zero row stays zero"
        );
        let mut row = [0f32; 3];
        assert!(int8(&quantized, &scales).row_into(2, &mut row));
        assert_eq!(row, restored[6..9], "one row reads as the whole does");
        assert!(!int8(&quantized, &scales).row_into(3, &mut row), "no row 3");
    }

    #[test]
    fn int8_rows_without_a_scale_each_are_refused() {
        let rows = [1u8, 2, 3, 4];
        let scales = f32_bytes(&[0.5]);
        let file = safetensors::serialize(
            [
                (
                    "w",
                    TensorView::new(Dtype::I8, vec![2, 2], &rows).expect("view"),
                ),
                (
                    "w.int8_row_scale",
                    TensorView::new(Dtype::F32, vec![1], &scales).expect("view"),
                ),
            ],
            None,
        )
        .expect("serialize");
        let error = read_tensors(&file).err().map(|e| e.to_string());
        assert_eq!(
            error.as_deref(),
            Some("w: its row scales do not fit its rows")
        );
    }

    #[test]
    fn a_file_round_trips_matrices_quantized_and_vectors_exact() {
        let matrix = f32_bytes(&[1.0, -0.5, 0.25, 2.0]);
        let bias = f32_bytes(&[0.123_456_7, -9.5]);
        let ids = [0u8; 16];
        let file = safetensors::serialize(
            [
                (
                    "w",
                    TensorView::new(Dtype::F32, vec![2, 2], &matrix).expect("view"),
                ),
                (
                    "b",
                    TensorView::new(Dtype::F32, vec![2], &bias).expect("view"),
                ),
                (
                    "ids",
                    TensorView::new(Dtype::I64, vec![2], &ids).expect("view"),
                ),
            ],
            None,
        )
        .expect("serialize");
        let compact = quantize(&file).expect("quantizes");
        let tensors: HashMap<String, (Vec<usize>, Vec<f32>)> = read_tensors(&compact)
            .expect("reads")
            .into_iter()
            .map(|(name, t)| (name, (t.shape, t.values.into_f32())))
            .collect();
        let mut names: Vec<&String> = tensors.keys().collect();
        names.sort();
        assert_eq!(names, ["b", "w"], "scales folded in, non-f32 dropped");
        assert_eq!(
            tensors["b"],
            (vec![2], vec![0.123_456_7, -9.5]),
            "vectors stay f32"
        );
        let (shape, w) = &tensors["w"];
        assert_eq!(shape, &[2, 2]);
        let expected = [([1.0, -0.5], 1.0 / 127.0), ([0.25, 2.0], 2.0 / 127.0)];
        for (row, (original, step)) in w.chunks(2).zip(expected) {
            for (r, o) in row.iter().zip(original) {
                assert!((r - o).abs() <= step / 2.0 + 1e-7, "{o} → {r}");
            }
        }
        let plain = read_tensors(&file).expect("an f32 file reads as it is");
        assert_eq!(plain["w"].values, Values::F32(vec![1.0, -0.5, 0.25, 2.0]));
        assert!(read_tensors(b"not a safetensors file").is_err());
    }
}
