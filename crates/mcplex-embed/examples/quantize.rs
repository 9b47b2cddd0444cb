//! Writes the compact (int8) copy of a BERT model's f32 `model.safetensors`: how
//! `crates/mcplex-embed/model/all-MiniLM-L6-v2-tools.int8.safetensors` was made (see the README there).
//!
//! `cargo run --release -p mcplex-embed --example quantize -- <f32 model.safetensors> <out>`

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = &args[..] else {
        eprintln!("usage: quantize <f32 model.safetensors> <out.safetensors>");
        return ExitCode::from(2);
    };
    let written = std::fs::read(input)
        .map_err(|e| format!("{input}: {e}"))
        .and_then(|f32_file| mcplex_embed::quantize(&f32_file).map_err(|e| format!("{input}: {e}")))
        .and_then(|compact| std::fs::write(output, compact).map_err(|e| format!("{output}: {e}")));
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("quantize: {error}");
            ExitCode::FAILURE
        }
    }
}
