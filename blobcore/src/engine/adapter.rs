//! Which GPU adapter the wgpu engine opens: a hardware adapter (discrete
//! before integrated before virtual) whenever one exists, a software
//! rasteriser (Mesa's lavapipe/llvmpipe, SwiftShader, Microsoft's WARP)
//! only when nothing else is there or when asked for by name.
//!
//! The choice is a pure function of the adapters' descriptions
//! ([`choose`]), so it is tested here on any machine; `gpu.rs` feeds it
//! what wgpu enumerates.

/// What kind of device an adapter drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AdapterKind {
    /// A GPU with its own memory (NVIDIA, AMD, Intel Arc cards).
    Discrete,
    /// A GPU sharing the host's memory.
    Integrated,
    /// A GPU behind a virtual machine's or container's virtualisation layer.
    Virtual,
    /// A hardware adapter wgpu cannot classify.
    Other,
    /// A software implementation running on the CPU (lavapipe, llvmpipe,
    /// SwiftShader, WARP): correct, but slower than blobcore's CPU engine.
    Software,
}

impl AdapterKind {
    /// The name the C API and Python print ("discrete", …, "software").
    pub fn name(self) -> &'static str {
        match self {
            AdapterKind::Discrete => "discrete",
            AdapterKind::Integrated => "integrated",
            AdapterKind::Virtual => "virtual",
            AdapterKind::Other => "other",
            AdapterKind::Software => "software",
        }
    }

    /// True for a software rasteriser.
    pub fn is_software(self) -> bool {
        self == AdapterKind::Software
    }
}

/// One adapter as wgpu enumerates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterInfo {
    /// The adapter's name, e.g. "NVIDIA H200" or "llvmpipe (LLVM 15.0.6, 256 bits)".
    pub name: String,
    /// Hardware or software, and which hardware.
    pub kind: AdapterKind,
    /// The graphics API wgpu reaches it through ("Vulkan", "Metal", "Dx12", "Gl").
    pub backend: String,
    /// The driver's name and version, as the driver reports them.
    pub driver: String,
}

/// Names of software rasterisers that some drivers report as a hardware
/// device type (WARP reports itself as integrated on some Windows builds).
const SOFTWARE_NAMES: [&str; 5] = ["llvmpipe", "lavapipe", "swiftshader", "microsoft basic render", "warp"];

/// The kind of an adapter from wgpu's device type and its name.
pub(crate) fn classify(device_type: wgpu::DeviceType, name: &str) -> AdapterKind {
    let lower = name.to_ascii_lowercase();
    if device_type == wgpu::DeviceType::Cpu || SOFTWARE_NAMES.iter().any(|s| lower.contains(s)) {
        return AdapterKind::Software;
    }
    match device_type {
        wgpu::DeviceType::DiscreteGpu => AdapterKind::Discrete,
        wgpu::DeviceType::IntegratedGpu => AdapterKind::Integrated,
        wgpu::DeviceType::VirtualGpu => AdapterKind::Virtual,
        _ => AdapterKind::Other,
    }
}

/// The index of the adapter to open among `adapters`: with a `hint`, the
/// first whose name contains it (of any kind — asking for lavapipe by name
/// gets lavapipe); without one, the first of the best kind (discrete,
/// integrated, virtual, other, software, in that order). `None` when no
/// adapter qualifies.
pub fn choose(adapters: &[AdapterInfo], hint: Option<&str>) -> Option<usize> {
    match hint {
        Some(h) => adapters.iter().position(|a| a.name.contains(h)),
        None => (0..adapters.len()).min_by_key(|&i| (adapters[i].kind, i)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn info(name: &str, kind: AdapterKind) -> AdapterInfo {
        AdapterInfo { name: name.into(), kind, backend: "Vulkan".into(), driver: String::new() }
    }

    #[test]
    fn software_names_and_types_are_software() {
        assert_eq!(classify(wgpu::DeviceType::Cpu, "llvmpipe (LLVM 15.0.6, 256 bits)"), AdapterKind::Software);
        assert_eq!(classify(wgpu::DeviceType::Other, "SwiftShader Device (Subzero)"), AdapterKind::Software);
        assert_eq!(classify(wgpu::DeviceType::IntegratedGpu, "Microsoft Basic Render Driver"), AdapterKind::Software);
        assert_eq!(classify(wgpu::DeviceType::DiscreteGpu, "NVIDIA H200"), AdapterKind::Discrete);
        assert_eq!(classify(wgpu::DeviceType::IntegratedGpu, "Intel(R) UHD Graphics 630"), AdapterKind::Integrated);
        assert_eq!(classify(wgpu::DeviceType::VirtualGpu, "virtio-gpu"), AdapterKind::Virtual);
    }

    #[test]
    fn a_hint_picks_by_name_even_a_software_adapter() {
        let a = [info("NVIDIA H200", AdapterKind::Discrete), info("llvmpipe (LLVM 15)", AdapterKind::Software)];
        assert_eq!(choose(&a, Some("llvmpipe")), Some(1));
        assert_eq!(choose(&a, Some("H200")), Some(0));
        assert_eq!(choose(&a, Some("Radeon")), None);
        assert_eq!(choose(&a, None), Some(0));
        assert_eq!(choose(&[], None), None);
    }

    fn kind() -> impl Strategy<Value = AdapterKind> {
        prop_oneof![
            Just(AdapterKind::Discrete),
            Just(AdapterKind::Integrated),
            Just(AdapterKind::Virtual),
            Just(AdapterKind::Other),
            Just(AdapterKind::Software)
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, rng_seed: proptest::test_runner::RngSeed::Fixed(33), ..ProptestConfig::default() })]
        /// Oracle: scan for discrete, then integrated, …, then software,
        /// taking the first of each kind; software only when nothing else.
        #[test]
        fn without_a_hint_the_best_hardware_kind_wins(kinds in proptest::collection::vec(kind(), 0..6)) {
            let adapters: Vec<AdapterInfo> = kinds.iter().enumerate().map(|(i, &k)| info(&format!("a{i}"), k)).collect();
            let order = [AdapterKind::Discrete, AdapterKind::Integrated, AdapterKind::Virtual, AdapterKind::Other, AdapterKind::Software];
            let expected = order.iter().find_map(|k| kinds.iter().position(|x| x == k));
            let got = choose(&adapters, None);
            prop_assert_eq!(got, expected);
            if let Some(i) = got {
                prop_assert!(!adapters[i].kind.is_software() || kinds.iter().all(|k| k.is_software()));
            }
        }
    }
}
