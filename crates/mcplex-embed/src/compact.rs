//! The compact form of a model's weights that the binary carries: every matrix as int8 with one
//! f32 scale per row (symmetric, `scale = max |w| / 127`), everything else (biases, layer norms)
//! as f32, in one safetensors file. A quarter of the f32 file's size; the forward pass computes
//! with `f32::from(q) * scale` for each weight, so only the rounding of each weight differs from
//! the f32 model (vectors within 1% of the f32 model's: see the tests).
//!
//! Owns: [`quantize`] (the f32 safetensors file → the compact one, how the vendored copy was
//! made), [`read_tensors`] (a compact or plain f32 file → f32 tensors by name) and
//! [`read_int8_rows`] (its int8 matrices as they are). Must not:
//! know which model the weights belong to.

use std::collections::HashMap;

use safetensors::{Dtype, SafeTensors, tensor::TensorView};

use crate::bert::Tensors;

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

/// The f32 tensors of `file` by name: a compact file's int8 matrices scaled back to f32, f32
/// tensors as they are. Integer tensors (a BERT's `position_ids`) are not weights and are
/// skipped; other float types are refused.
pub(crate) fn read_tensors(file: &[u8]) -> Result<Tensors, CompactError> {
    let file = SafeTensors::deserialize(file).map_err(|e| fail(e.to_string()))?;
    let mut tensors = HashMap::new();
    for (name, view) in file.tensors() {
        let values = match view.dtype() {
            Dtype::I64 | Dtype::I32 | Dtype::U8 | Dtype::BOOL => continue,
            Dtype::F32 if name.ends_with(SCALE_SUFFIX) => continue,
            Dtype::F32 => f32_values(view.data()),
            Dtype::I8 => {
                let scales = file
                    .tensor(&format!("{name}{SCALE_SUFFIX}"))
                    .map_err(|_| fail(format!("{name}: int8 without its row scales")))?;
                dequantize_rows(view.data(), &f32_values(scales.data()), view.shape())
                    .ok_or_else(|| fail(format!("{name}: its row scales do not fit its rows")))?
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
        tensors.insert(name, (view.shape().to_vec(), values));
    }
    Ok(tensors)
}

/// The int8 matrices of a compact file by name, with their row scales (empty for an f32 file):
/// the forward pass keeps them so and reads them into f32 a few rows at a time.
pub(crate) fn read_int8_rows(file: &[u8]) -> Result<Int8Matrices, CompactError> {
    let file = SafeTensors::deserialize(file).map_err(|e| fail(e.to_string()))?;
    let mut matrices = HashMap::new();
    for (name, view) in file.tensors() {
        if view.dtype() != Dtype::I8 {
            continue;
        }
        let scales = file
            .tensor(&format!("{name}{SCALE_SUFFIX}"))
            .map_err(|_| fail(format!("{name}: int8 without its row scales")))?;
        let values: Vec<i8> = view
            .data()
            .iter()
            .map(|b| i8::from_le_bytes([*b]))
            .collect();
        matrices.insert(name, (values, f32_values(scales.data())));
    }
    Ok(matrices)
}

/// Int8 matrices by name: their values, row after row, and a scale per row.
pub(crate) type Int8Matrices = HashMap<String, (Vec<i8>, Vec<f32>)>;

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

/// The f32 values of int8 rows `data` of `shape` scaled by `scales`; `None` when the shapes
/// disagree.
fn dequantize_rows(data: &[u8], scales: &[f32], shape: &[usize]) -> Option<Vec<f32>> {
    let [rows, columns] = shape else { return None };
    if scales.len() != *rows || data.len() != rows * columns || *columns == 0 {
        return None;
    }
    Some(
        data.chunks(*columns)
            .zip(scales)
            .flat_map(|(row, scale)| {
                row.iter()
                    .map(move |byte| f32::from(i8::from_le_bytes([*byte])) * scale)
            })
            .collect(),
    )
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

    #[test]
    fn rows_come_back_within_half_a_step_of_their_scale() {
        let values = [0.5, -1.27, 0.01, 0.0, 0.0, 0.0, 3.0, 2.0, -0.001];
        let (quantized, scales) = quantize_rows(&values, 3);
        assert_eq!(scales, [0.01, 1.0, 3.0 / 127.0], "largest magnitude / 127");
        let restored = dequantize_rows(&quantized, &scales, &[3, 3]).expect("shapes fit");
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
        assert!(dequantize_rows(&quantized, &scales[..2], &[3, 3]).is_none());
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
        let tensors = read_tensors(&compact).expect("dequantizes");
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
        assert_eq!(plain["w"].1, [1.0, -0.5, 0.25, 2.0]);
        assert!(read_tensors(b"not a safetensors file").is_err());
    }
}
