//! Which instructions the forward pass runs: the best this CPU has, or fewer where the
//! environment variable `MCPLEX_EMBED_ISA` caps them (`portable`, `avx2`, `avx512`,
//! `avx512-vnni`), so that one machine can measure and test what a CPU with fewer computes, and
//! an operator can rule out a tier, as oneDNN's `ONEDNN_MAX_CPU_ISA` lets them. The tiers are
//! x86-64's; elsewhere `pulp` picks the vectors the CPU has (NEON on aarch64), and the cap is
//! still read, so that a value it cannot read fails alike.
//!
//! Owns: the detection, the cap, and the proofs (`pulp`'s `V3` and `V4`, [`Vnni`]) that every
//! other module of this crate gets its instructions from. Must not: compute anything.

use std::sync::OnceLock;

/// The environment variable that caps the instructions.
pub const CAP_VARIABLE: &str = "MCPLEX_EMBED_ISA";

/// A tier of instructions, each holding the ones below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isa {
    /// Plain arithmetic, vectorised by the compiler for the target it was built for.
    Portable,
    /// AVX2 and FMA (x86-64-v3).
    Avx2,
    /// AVX-512 F, BW, CD, DQ and VL (x86-64-v4).
    Avx512,
    /// x86-64-v4 and AVX-512 VNNI.
    Avx512Vnni,
}

impl Isa {
    /// How the cap spells it.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Portable => "portable",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Avx512Vnni => "avx512-vnni",
        }
    }

    fn parse(text: &str) -> Option<Isa> {
        [Isa::Portable, Isa::Avx2, Isa::Avx512, Isa::Avx512Vnni]
            .into_iter()
            .find(|isa| isa.name() == text.trim())
    }

    /// The best tier this CPU has.
    fn detected() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if crate::product::Vnni::detect().is_some() {
                return Isa::Avx512Vnni;
            }
            if pulp::x86::V4::try_new().is_some() {
                return Isa::Avx512;
            }
            if pulp::x86::V3::try_new().is_some() {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }
}

/// Why the cap cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{CAP_VARIABLE}={value:?} names no instruction set (portable, avx2, avx512, avx512-vnni)")]
pub struct CapError {
    value: String,
}

/// The tier the forward pass runs: the CPU's best, at most the cap. Read once per process.
pub fn isa() -> Result<Isa, CapError> {
    static CHOSEN: OnceLock<Result<Isa, CapError>> = OnceLock::new();
    CHOSEN
        .get_or_init(|| choose(Isa::detected(), std::env::var_os(CAP_VARIABLE)))
        .clone()
}

/// The tier for a CPU whose best is `detected` under the cap `value`: unset or empty (as a
/// compose file writes a variable it leaves blank) caps nothing; a value that is no tier's
/// name, or not text, is refused.
fn choose(detected: Isa, value: Option<std::ffi::OsString>) -> Result<Isa, CapError> {
    let Some(value) = value.filter(|value| !value.is_empty()) else {
        return Ok(detected);
    };
    match value.to_str().and_then(Isa::parse) {
        Some(cap) => Ok(detected.min(cap)),
        None => Err(CapError {
            value: value.to_string_lossy().into_owned(),
        }),
    }
}

/// The tier chosen, or the portable one when the cap cannot be read: a model never loads then
/// (loading refuses it once a directory's files are read and checked, so that their errors
/// are said too), so this serves only kernels' own tests and a refused load's last step.
fn chosen() -> Isa {
    isa().unwrap_or(Isa::Portable)
}

/// AVX2 and FMA, where the chosen tier has them.
#[cfg(target_arch = "x86_64")]
pub(crate) fn v3() -> Option<pulp::x86::V3> {
    (chosen() >= Isa::Avx2)
        .then(pulp::x86::V3::try_new)
        .flatten()
}

/// x86-64-v4, where the chosen tier has it.
#[cfg(target_arch = "x86_64")]
pub(crate) fn v4() -> Option<pulp::x86::V4> {
    (chosen() >= Isa::Avx512)
        .then(pulp::x86::V4::try_new)
        .flatten()
}

/// AVX-512 VNNI, where the chosen tier has it.
#[cfg(target_arch = "x86_64")]
pub(crate) fn vnni() -> Option<crate::product::Vnni> {
    (chosen() >= Isa::Avx512Vnni)
        .then(crate::product::Vnni::detect)
        .flatten()
}

/// `work` compiled for the chosen tier's instructions and run.
pub(crate) fn dispatch<W: pulp::WithSimd>(work: W) -> W::Output {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(simd) = v4() {
            return pulp::Simd::vectorize(simd, work);
        }
        if let Some(simd) = v3() {
            return pulp::Simd::vectorize(simd, work);
        }
        pulp::Simd::vectorize(pulp::Scalar::new(), work)
    }
    #[cfg(not(target_arch = "x86_64"))]
    pulp::Arch::new().dispatch(work)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tier_is_spelt_as_the_cap_reads_it() {
        for isa in [Isa::Portable, Isa::Avx2, Isa::Avx512, Isa::Avx512Vnni] {
            assert_eq!(Isa::parse(isa.name()), Some(isa));
        }
        assert_eq!(Isa::parse(" avx2\n"), Some(Isa::Avx2));
        assert_eq!(Isa::parse("sse4"), None);
        assert_eq!(Isa::parse("AVX2"), None);
    }

    #[test]
    fn the_cap_lowers_the_tier_and_never_raises_it() {
        let cap = |text: &str| Some(std::ffi::OsString::from(text));
        assert_eq!(choose(Isa::Avx512Vnni, cap("avx2")), Ok(Isa::Avx2));
        assert_eq!(choose(Isa::Avx512Vnni, cap("portable")), Ok(Isa::Portable));
        assert_eq!(choose(Isa::Avx2, cap("avx512-vnni")), Ok(Isa::Avx2));
        assert_eq!(choose(Isa::Avx512, None), Ok(Isa::Avx512));
        assert_eq!(choose(Isa::Avx512, cap("")), Ok(Isa::Avx512));
        let refused = choose(Isa::Avx2, cap("sse9")).expect_err("no such tier");
        assert_eq!(
            refused.to_string(),
            "MCPLEX_EMBED_ISA=\"sse9\" names no instruction set (portable, avx2, avx512, avx512-vnni)"
        );
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStringExt;
            let not_text = std::ffi::OsString::from_vec(vec![b'a', 0xff]);
            assert!(
                choose(Isa::Avx2, Some(not_text)).is_err(),
                "not text is refused"
            );
        }
    }

    #[test]
    fn the_chosen_tier_never_exceeds_the_cpu() {
        let chosen = isa().expect("the test run's cap, if any, is readable");
        assert!(chosen <= Isa::detected());
        #[cfg(target_arch = "x86_64")]
        {
            assert_eq!(v3().is_some(), chosen >= Isa::Avx2);
            assert_eq!(v4().is_some(), chosen >= Isa::Avx512);
            assert_eq!(vnni().is_some(), chosen >= Isa::Avx512Vnni);
        }
    }
}
