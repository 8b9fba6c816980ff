//! Our own sans-IO congestion controllers for QUIC (noq): CUBIC with HyStart++ ([`Cubic`]),
//! Prague for L4S ([`Prague`]),
//! and BBR in two variants:
//!
//! * [`BbrVersion::V3`] — BBRv3 as specified by draft-ietf-ccwg-bbr-06;
//! * [`BbrVersion::V2`] — the same machinery with BBRv2's rules where they differ: Linux's
//!   `tcp_bbr2.c` (google/bbr v2alpha, the deployed BBRv2), and
//!   draft-cardwell-iccrg-bbr-congestion-control-02 where the kernel code says nothing
//!   ([`BbrParams::for_version`] lists every difference).
//!
//! Pieces, one job each:
//! * [`delivery_rate`] — per-packet delivery-rate sampling (draft-cheng-iccrg-delivery-rate-estimation);
//! * `bbr` — the algorithm ([`Bbr`]), all time passed in;
//! * `controller` — the `noq_proto::congestion::Controller` adapter and [`BbrFactory`];
//! * `cubic` — CUBIC (RFC 9438) with HyStart++ (RFC 9406), [`Cubic`] and [`CubicFactory`]:
//!   what `quic:cubic` runs, since noq's own CUBIC has no slow-start exit but loss;
//! * `prague` — Prague (draft-briscoe-iccrg-prague-congestion-control), the scalable L4S
//!   controller: ECT(1), DCTCP's α response, RTT independence ([`Prague`], [`PragueFactory`]);
//! * `telemetry` — the [`Telemetry`] handle a sampler thread reads: [`BbrSnapshot`] and the
//!   [`StateChange`] timeline.
//!
//! Reading the controller back from a connection:
//! `conn.congestion_state(path).clone_box().into_any().downcast::<Bbr>()`.

mod bbr;
mod controller;
mod cubic;
pub mod delivery_rate;
mod prague;
mod telemetry;

pub use bbr::{Bbr, BbrParams, BbrVersion, StartupLossExit, UpExit, DEFECTS as BBR_TEST_DEFECTS};
pub use controller::BbrFactory;
pub use cubic::{Cubic, CubicFactory, SlowStartPhase, LINUX_CSS_ROUNDS, RFC_CSS_ROUNDS};
/// The trait side, re-exported so users need not name noq-proto's module path.
pub use noq_proto::congestion::{Controller, ControllerFactory, ControllerMetrics};
/// The codepoint a controller asks its packets to carry (ECT(1) for L4S).
pub use noq_proto::EcnCodepoint;
pub use prague::{Prague, PragueFactory, RTT_TRANSITION_ROUNDS, TARGET_RTT};
pub use telemetry::{BbrSnapshot, BbrState, StateChange, Telemetry};
