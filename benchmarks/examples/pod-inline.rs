//! Where a cached typed Pod's inline bytes go, and what boxing the optional structs
//! would save (the issue's compact cache, item 2): prints the inline size of each
//! k8s-openapi type the benchmark Pod holds, the bytes of its optional struct fields
//! (inline whether set or not, where Go keeps a nil pointer), and, for the benchmark
//! Pod's shape (2 containers, 2 container statuses, 2 volumes, 2 projections), the
//! inline bytes saved if every optional struct field below were `Option<Box<T>>`.
//!
//! ```text
//! cargo run --release -p kubegen-benchmarks --example pod-inline
//! ```

use std::mem::size_of;

use k8s_openapi::api::core::v1::{
    Affinity, Container, ContainerState, ContainerStatus, Lifecycle, Pod, PodDNSConfig, PodOS,
    PodSecurityContext, PodSpec, PodStatus, Probe, ResourceRequirements, SecurityContext, Volume,
    VolumeProjection,
};

/// The inline bytes an `Option<T>` field costs beyond a pointer (what boxing saves when
/// the field is unset; when set, the box costs a pointer more).
fn slack<T>() -> usize {
    size_of::<Option<T>>().saturating_sub(size_of::<usize>())
}

fn main() {
    println!("inline sizes (bytes):");
    for (name, n) in [
        ("Pod", size_of::<Pod>()),
        ("PodSpec", size_of::<PodSpec>()),
        ("PodStatus", size_of::<PodStatus>()),
        ("Container", size_of::<Container>()),
        ("ContainerStatus", size_of::<ContainerStatus>()),
        ("ContainerState", size_of::<ContainerState>()),
        ("Volume", size_of::<Volume>()),
        ("VolumeProjection", size_of::<VolumeProjection>()),
        ("Probe", size_of::<Probe>()),
        ("SecurityContext", size_of::<SecurityContext>()),
        ("Lifecycle", size_of::<Lifecycle>()),
        ("ResourceRequirements", size_of::<ResourceRequirements>()),
    ] {
        println!("  {name:<22} {n:>6}");
    }
    // Optional struct fields (by hand from k8s-openapi's definitions).
    let container = slack::<Lifecycle>()
        + 3 * slack::<Probe>()
        + slack::<ResourceRequirements>()
        + slack::<SecurityContext>();
    let spec = slack::<Affinity>()
        + slack::<PodDNSConfig>()
        + slack::<PodOS>()
        + slack::<PodSecurityContext>()
        + slack::<ResourceRequirements>();
    let status = 2 * slack::<ContainerState>() + slack::<ResourceRequirements>();
    // A Volume is its name and one of ~30 sources, each inline: boxing the whole
    // source leaves the name and a pointer.
    let volume = size_of::<Volume>().saturating_sub(size_of::<String>() + size_of::<usize>());
    let projection = size_of::<VolumeProjection>().saturating_sub(size_of::<usize>());
    let pod = 2 * container + spec + 2 * status + 2 * volume + 2 * projection;
    println!("optional-struct bytes that boxing would save, per instance:");
    println!("  Container {container}, PodSpec {spec}, ContainerStatus {status}, Volume {volume}, VolumeProjection {projection}");
    println!(
        "per benchmark Pod (2 containers, 2 statuses, 2 volumes, 2 projections): {pod} bytes of {} inline",
        size_of::<Pod>()
            + 2 * size_of::<Container>()
            + 2 * size_of::<ContainerStatus>()
            + 2 * size_of::<Volume>()
            + 2 * size_of::<VolumeProjection>()
    );
}
