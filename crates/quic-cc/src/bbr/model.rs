//! The network path model: bandwidth and its short-term bounds (§5.5.10), ACK
//! aggregation (§5.5.9), the loss signals (§5.5.10.2) and the ECN response (Linux v3's
//! `tcp_bbr.c`; see the module's head).

use super::*;

impl Bbr {
    // ---------------------------------------------------------------- bandwidth model

    /// §5.5.10.3 BBRUpdateLatestDeliverySignals.
    pub(super) fn update_latest_delivery_signals(&mut self, rs: &RateSample) {
        self.loss_round_start = false;
        self.bw_latest = self.bw_latest.max(rs.delivery_rate);
        self.inflight_latest = self.inflight_latest.max(rs.delivered);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = self.sampler.delivered();
            self.loss_round_start = true;
        }
    }

    /// §5.5.10.3 BBRAdvanceLatestDeliverySignals.
    pub(super) fn advance_latest_delivery_signals(&mut self, rs: &RateSample) {
        if self.loss_round_start {
            self.bw_latest = rs.delivery_rate;
            self.inflight_latest = rs.delivered;
        }
    }

    /// §5.5.10.3 BBRUpdateCongestionSignals.
    pub(super) fn update_congestion_signals(&mut self, rs: &RateSample) {
        // §5.5.5 BBRUpdateMaxBw.
        self.update_round(rs);
        if self.round_start {
            self.update_ecn_alpha();
        }
        if rs.delivery_rate > 0.0 && (rs.delivery_rate >= self.max_bw || !rs.is_app_limited || self.p.max_bw_counts_app_limited) {
            self.max_bw_filter.update(rs.delivery_rate, self.cycle_count, self.p.max_bw_never_forgets);
            self.max_bw = self.max_bw_filter.get();
        }
        if !self.loss_round_start {
            return;
        }
        self.check_startup_high_loss();
        self.adapt_lower_bounds_from_congestion();
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_events_in_round = 0;
        self.lost_bytes_in_round = 0;
        self.last_lost_pn = None;
        self.delivered_at_loss_round_start = self.sampler.delivered();
    }

    /// §5.5.10.3 BBRAdaptLowerBoundsFromCongestion: cut the short-term model by Beta after a
    /// round with loss, except while deliberately probing (Startup, REFILL, UP).
    ///
    /// A round with CE marks cuts inflight_lo by α × `ecn_factor` (tcp_bbr.c
    /// `bbr_adapt_lower_bounds` with `bbr_ecn_lower_bounds`): not floored by this round's
    /// delivery as the loss cut is, and bw_lo is left alone; the lower of the two cuts wins.
    pub(super) fn adapt_lower_bounds_from_congestion(&mut self) {
        if self.is_probing_bw() {
            return;
        }
        let mut ecn_inflight_lo = None;
        if self.ecn_in_round && self.p.ecn_factor > 0.0 {
            let inflight_lo = *self.inflight_shortterm.get_or_insert(self.cwnd);
            ecn_inflight_lo = Some((inflight_lo as f64 * (1.0 - self.ecn_alpha * self.p.ecn_factor)) as u64);
        }
        if self.loss_in_round {
            // BBRInitLowerBounds.
            let bw_lo = *self.bw_shortterm.get_or_insert(self.max_bw);
            let inflight_lo = *self.inflight_shortterm.get_or_insert(self.cwnd);
            // BBRLossLowerBounds.
            self.bw_shortterm = Some(self.bw_latest.max(self.p.beta * bw_lo));
            self.inflight_shortterm = Some(self.inflight_latest.max((self.p.beta * inflight_lo as f64) as u64));
        }
        if let Some(ecn_lo) = ecn_inflight_lo {
            self.inflight_shortterm = Some(self.inflight_shortterm.map_or(ecn_lo, |lo| lo.min(ecn_lo)));
        }
    }

    pub(super) fn is_probing_bw(&self) -> bool {
        matches!(self.state, BbrState::Startup | BbrState::ProbeBwRefill | BbrState::ProbeBwUp)
    }

    pub(super) fn reset_short_term_model(&mut self) {
        self.bw_shortterm = None;
        self.inflight_shortterm = None;
    }

    pub(super) fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.bw_latest = 0.0;
        self.inflight_latest = 0;
        self.reset_ecn_signals();
    }

    /// The ECN part of tcp_bbr.c `bbr_reset_congestion_signals` (and the loss-in-cycle flag
    /// the ECN reprobe reads).
    pub(super) fn reset_ecn_signals(&mut self) {
        self.ecn_in_round = false;
        self.ecn_in_cycle = false;
        self.loss_in_cycle = false;
    }

    /// §5.5.10.3 BBRBoundBWForModel.
    pub(super) fn bound_bw_for_model(&mut self) {
        self.bw = self.bw_shortterm.map_or(self.max_bw, |lo| self.max_bw.min(lo));
    }

    /// §5.5.9 BBRUpdateACKAggregation: bytes acked beyond what bw explains, max over 10 rounds
    /// in steady state (BBRExtraAckedFilterLen) but over 1 round in Startup, as the draft has it:
    /// while bw doubles each round, an older round's excess over a bw half as large is not
    /// aggregation, and keeping it would inflate Startup's cwnd and queue.
    pub(super) fn update_ack_aggregation(&mut self, now: Instant, rs: &RateSample) {
        let start = *self.extra_acked_interval_start.get_or_insert(now);
        let interval = now.saturating_duration_since(start).as_secs_f64();
        let mut expected = (self.bw * interval) as u64;
        if self.extra_acked_delivered <= expected {
            self.extra_acked_delivered = 0;
            self.extra_acked_interval_start = Some(now);
            expected = 0;
        }
        self.extra_acked_delivered += rs.newly_acked;
        let extra = (self.extra_acked_delivered - expected).min(self.cwnd);
        let window = if self.full_bw_reached { EXTRA_ACKED_FILTER_LEN } else { 1 };
        self.extra_acked = self.extra_acked_filter.update(extra, self.round_count, window);
    }

    // ---------------------------------------------------------------- loss signals

    pub(super) fn note_loss(&mut self) {
        if !self.loss_in_round {
            self.loss_round_delivered = self.sampler.delivered();
        }
        self.save_state_upon_loss();
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }

    /// §5.5.10.2 IsInflightTooHigh: more than BBRLossThresh of what was in flight was lost.
    pub(super) fn is_inflight_too_high(&self, lost: u64, tx_in_flight: u64) -> bool {
        lost as f64 > tx_in_flight as f64 * self.p.loss_thresh
    }

    /// §5.5.10.2 BBRInflightAtLoss: the inflight at which the loss rate crossed the threshold,
    /// interpolated inside the lost packet.
    pub(super) fn inflight_at_loss(&self, packet: &SentPacket, lost: u64) -> u64 {
        let inflight_prev = packet.tx_in_flight.saturating_sub(packet.size) as f64;
        let lost_prev = lost.saturating_sub(packet.size) as f64;
        let lost_prefix = ((self.p.loss_thresh * inflight_prev - lost_prev) / (1.0 - self.p.loss_thresh)).max(0.0);
        (inflight_prev + lost_prefix) as u64
    }

    /// §5.5.10.2 BBRHandleInflightTooHigh: the probe found the limit; remember it.
    pub(super) fn handle_inflight_too_high(&mut self, tx_in_flight: u64, app_limited: bool) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !app_limited {
            let floor = (self.target_inflight() as f64 * self.p.beta) as u64;
            self.inflight_longterm = Some(tx_in_flight.max(floor));
        }
        if self.state == BbrState::ProbeBwUp {
            self.set_undo_state(BbrState::ProbeBwUp);
            self.start_probe_bw_down();
        }
    }

    /// §5.3.1.3 BBRCheckStartupHighLoss (v3, [`StartupLossExit::RoundLossRate`]): leave
    /// Startup when a round lost more than BBRLossThresh in at least BBRStartupFullLossCnt
    /// separate ranges.
    pub(super) fn check_startup_high_loss(&mut self) {
        if self.p.startup_loss_exit != StartupLossExit::RoundLossRate || self.full_bw_reached || self.state != BbrState::Startup {
            return;
        }
        let delivered = self.sampler.delivered() - self.delivered_at_loss_round_start;
        let sent = delivered + self.lost_bytes_in_round;
        if self.loss_events_in_round >= self.p.startup_full_loss_count && self.is_inflight_too_high(self.lost_bytes_in_round, sent) {
            self.set_undo_state(BbrState::Startup);
            self.full_bw_reached = true;
            let bdp = self.bdp_multiple(self.max_bw, 1.0);
            self.inflight_longterm = Some(bdp.max(self.inflight_latest));
        }
    }

    /// v2's Startup loss exit ([`StartupLossExit::LossMarkingAcks`], tcp_bbr2.c
    /// `bbr2_check_loss_too_high_in_startup`): judged once per round, at its end, and only in
    /// recovery, so that one or two random losses in a small early round cannot end Startup.
    pub(super) fn check_startup_loss_marking_acks(&mut self, rs: &RateSample) {
        if self.p.startup_loss_exit != StartupLossExit::LossMarkingAcks || self.full_bw_reached {
            return;
        }
        // noq reports an ACK's losses after the ACK, so they arrive with the next sample.
        if rs.newly_lost > 0 {
            self.loss_marking_acks_in_round = (self.loss_marking_acks_in_round + 1).min(15);
        }
        if self.loss_round_start
            && self.recovery_start.is_some()
            && self.loss_marking_acks_in_round >= self.p.startup_full_loss_count
            && (self.is_inflight_too_high(rs.lost, rs.tx_in_flight) || self.is_ecn_too_high(rs))
        {
            // bbr2_handle_queue_too_high_in_startup.
            self.set_undo_state(BbrState::Startup);
            self.full_bw_reached = true;
            self.inflight_longterm = Some(self.inflight_for(1.0));
            return;
        }
        if self.loss_round_start {
            self.loss_marking_acks_in_round = 0;
        }
    }

    // ---------------------------------------------------------------- ECN
    //
    // Linux's v3 (google/bbr `v3` branch, net/ipv4/tcp_bbr.c); -06 §3.7 leaves the response
    // open but requires one. What each function follows is named beside it. CE counts are
    // QUIC's per-packet ECN counts (RFC 9000 §13.4.1), kept by the sampler.

    /// tcp_bbr.c `bbr_update_ecn_alpha`, at each round start: become ECN-eligible once the
    /// peer's ECN counts come back (the kernel's `bbr_can_use_ecn`: negotiated, and marks
    /// known to be shallow-threshold, which ECT(1) asks for; with ECT(0) also min_rtt ≤
    /// `ecn_max_rtt`), then α ← (1 − g)·α + g·(CE / delivered) over the packets since the
    /// last update, and Startup's ECN exit.
    pub(super) fn update_ecn_alpha(&mut self) {
        if !self.ecn_eligible && self.ecn_feedback_seen && self.p.ecn_factor > 0.0 {
            let low_rtt = match self.p.ecn_max_rtt {
                None => true,
                Some(max) => self.min_rtt.is_some_and(|rtt| rtt <= max),
            };
            self.ecn_eligible = self.p.ecn_l4s || low_rtt;
        }
        if !self.ecn_eligible {
            return;
        }
        let (ecn, ce) = self.sampler.ecn_counts();
        let (last_ecn, last_ce) = self.alpha_last_ecn;
        let delivered = ecn - last_ecn;
        if delivered == 0 {
            return;
        }
        let ce_ratio = (ce - last_ce) as f64 / delivered as f64;
        let g = self.p.ecn_alpha_gain;
        self.ecn_alpha = ((1.0 - g) * self.ecn_alpha + g * ce_ratio).min(1.0);
        self.alpha_last_ecn = (ecn, ce);
        self.check_ecn_too_high_in_startup(ce_ratio);
    }

    /// tcp_bbr.c `bbr_check_ecn_too_high_in_startup`: `full_ecn_count` consecutive rounds at
    /// least `ecn_thresh` marked end Startup, with inflight_hi at the BDP or the latest
    /// round's delivery (`bbr_handle_queue_too_high_in_startup`).
    pub(super) fn check_ecn_too_high_in_startup(&mut self, ce_ratio: f64) {
        if self.full_bw_reached || self.p.full_ecn_count == 0 || self.p.ecn_thresh <= 0.0 {
            return;
        }
        if ce_ratio >= self.p.ecn_thresh {
            self.startup_ecn_rounds += 1;
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= self.p.full_ecn_count {
            self.full_bw_reached = true;
            self.inflight_longterm = Some(self.inflight_for(1.0).max(self.inflight_latest));
        }
    }

    /// The ECN half of tcp_bbr.c `bbr_is_inflight_too_high`: more than `ecn_thresh` of the
    /// packets delivered over this sample's flight were marked.
    pub(super) fn is_ecn_too_high(&self, rs: &RateSample) -> bool {
        self.ecn_eligible
            && self.p.ecn_thresh > 0.0
            && rs.ce_delivered > 0
            && rs.ecn_delivered > 0
            && rs.ce_delivered as f64 > rs.ecn_delivered as f64 * self.p.ecn_thresh
    }

    /// tcp_bbr.c `bbr_check_time_to_probe_bw`'s first rule: a cycle with marks and no loss,
    /// outside recovery, probes again at once, its first UP round growing inflight_hi by
    /// `ecn_reprobe_gain` of it (2ⁿ packets, n = log2 of that), in case the cross traffic
    /// behind the marks has gone.
    pub(super) fn ecn_reprobe_due(&self) -> bool {
        self.p.ecn_reprobe_gain > 0.0 && self.ecn_eligible && self.ecn_in_cycle && !self.loss_in_cycle && self.recovery_start.is_none()
    }

    pub(super) fn ecn_reprobe_rounds(&self) -> u32 {
        let Some(hi) = self.inflight_longterm else {
            return 30;
        };
        let packets = (hi / self.smss) as f64 * self.p.ecn_reprobe_gain;
        if packets < 1.0 {
            0
        } else {
            (packets.log2().floor() as u32).min(30)
        }
    }
}
