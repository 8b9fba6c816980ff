//! The transport's events (§5.2.2 OnTransmit, acknowledgements, losses, the
//! §5.2.3 update flow) and the round counting of §5.5.1.

use super::*;

impl Bbr {
    // ---------------------------------------------------------------- transport events

    /// A packet of `bytes` with number `pn` left (§5.2.2 `OnTransmit`).
    pub fn on_packet_sent(&mut self, now: Instant, bytes: u64, pn: u64) {
        self.now = now;
        self.handle_restart_from_idle(now);
        self.sampler.on_packet_sent(now, bytes, pn);
        if self.sampler.inflight() + self.smss > self.cwnd {
            self.cwnd_limited_this_round = true;
        }
    }

    /// The sender was blocked by cwnd (the draft's `C.is_cwnd_limited`).
    pub fn on_cwnd_limited(&mut self) {
        self.cwnd_limited_this_round = true;
    }

    /// The application had nothing to send and neither cwnd nor pacing held it back.
    pub fn on_app_limited(&mut self) {
        if self.sampler.inflight() < self.cwnd {
            self.sampler.mark_app_limited();
        }
    }

    /// One packet, sent at `sent`, was acknowledged. Call [`Bbr::on_ack_batch_end`] after
    /// the last packet of an ACK frame.
    pub fn on_packet_acked(&mut self, now: Instant, sent: Instant, pn: u64) {
        self.now = now;
        self.sampler.on_packet_acked_sent_at(now, pn, sent);
        if self.recovery_start.is_some_and(|start| sent > start) {
            // RFC 9002 §7.3.2: recovery ends once a packet sent after it began is acked.
            self.recovery_start = None;
            if self.p.recovery_restores_cwnd || self.recovery_after_rto {
                self.restore_cwnd();
            }
            self.recovery_after_rto = false;
            if self.loss_memory.is_none() {
                self.undo_saved = false;
            }
        }
    }

    /// How long the transport remembers a packet it declared lost, counted from its sending
    /// (noq: 2 PTOs, RFC 9002 §6.2.1's PTO from its smoothed RTT and variation). With it, a
    /// spurious report undoes every loss since none was pending, even across recoveries: at
    /// a 1 ms RTT a recovery ends within a round, before the reordered packet that began it
    /// is acknowledged, and the next loss would otherwise save a model the first one cut.
    pub fn on_loss_memory(&mut self, memory: Duration) {
        self.loss_memory = Some(memory);
    }

    /// Forgets the lost packets the transport has forgotten: they were really lost. Once none
    /// is pending the next loss saves afresh; if others are, an undo may lift only what came
    /// after the real ones, so it restores the model from just before the oldest still pending
    /// (and no state change an older loss caused).
    fn forget_lost(&mut self, now: Instant) {
        let Some(memory) = self.loss_memory else { return };
        let before = self.lost_pending.len();
        while self.lost_pending.front().is_some_and(|l| now.saturating_duration_since(l.sent) > memory) {
            self.lost_pending.pop_front();
        }
        if self.lost_pending.len() == before {
            return;
        }
        match self.lost_pending.front().copied() {
            None => self.undo_saved = false,
            Some(oldest) => {
                self.undo_bw_shortterm = oldest.bw_shortterm;
                self.undo_inflight_shortterm = oldest.inflight_shortterm;
                self.undo_inflight_longterm = oldest.inflight_longterm;
                if self.undo_state_since.is_some_and(|t| t < oldest.declared) {
                    self.undo_state = None;
                }
            }
        }
    }

    /// Sets the state an undo returns to (the STARTUP or PROBE_BW_UP a loss ended).
    pub(super) fn set_undo_state(&mut self, state: BbrState) {
        self.undo_state = Some(state);
        self.undo_state_since = Some(self.now);
    }

    /// An ACK frame is about to be processed whose newest packet the peer received
    /// `ack_delay` before it arrived (QUIC's ACK Delay field): its rate sample's ACK phase is
    /// timed at that receipt ([`DeliveryRateSampler::on_ack_receipt`]), unless the test-only
    /// defect `rate-samples-at-ack-arrival` keeps the arrival.
    pub fn on_ack_delay(&mut self, now: Instant, ack_delay: Duration) {
        if !self.p.rate_samples_at_ack_arrival {
            self.sampler.on_ack_receipt(now.checked_sub(ack_delay).unwrap_or(now));
        }
    }

    /// End of an ACK batch: take a rate sample and run `UpdateOnACK` (§5.2.3).
    pub fn on_ack_batch_end(&mut self, now: Instant) {
        self.now = now;
        self.forget_lost(now);
        let Some(rs) = self.sampler.generate() else {
            return;
        };
        self.rs = Some(rs);
        self.update_model_and_state(now, &rs);
        self.update_control_parameters(&rs);
        // tcp_bbr.c `bbr_main`, after the update: this cycle saw loss / CE marks.
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.ce_delivered > 0;
        self.publish();
    }

    /// One packet was declared lost (§5.5.10.2 `BBRHandleLostPacket`).
    pub fn on_packet_lost(&mut self, now: Instant, pn: u64) {
        self.now = now;
        let Some(packet) = self.sampler.on_packet_lost(pn) else {
            return;
        };
        self.forget_lost(now);
        if self.loss_memory.is_some() {
            let (bw_shortterm, inflight_shortterm, inflight_longterm) = (self.bw_shortterm, self.inflight_shortterm, self.inflight_longterm);
            self.lost_pending.push_back(PendingLoss { sent: packet.send_time, declared: now, bw_shortterm, inflight_shortterm, inflight_longterm });
        }
        // A new lost range unless the previous packet of the flight was lost too (§5.3.1.3's
        // "discontiguous sequence ranges"; packet numbers skip the ACK-only packets between).
        if self.last_lost_pn.is_none() || packet.prev_sent_pn != self.last_lost_pn {
            self.loss_events_in_round += 1;
        }
        self.last_lost_pn = Some(pn);
        self.lost_bytes_in_round += packet.size;
        self.note_loss();
        if !self.bw_probe_samples {
            return;
        }
        let lost_since_sent = self.sampler.lost() - packet.lost;
        if self.is_inflight_too_high(lost_since_sent, packet.tx_in_flight) {
            let inflight_at_loss = self.inflight_at_loss(&packet, lost_since_sent);
            self.handle_inflight_too_high(inflight_at_loss, packet.is_app_limited);
        }
    }

    /// A loss episode (one per batch of lost packets): enter recovery (§5.6.4.4).
    pub fn on_congestion_event(&mut self, now: Instant, persistent: bool) {
        self.now = now;
        if persistent {
            // RFC 9002 §7.6.2 persistent congestion, the draft's OnEnterRTO.
            self.save_cwnd();
            self.save_state_upon_loss();
            self.cwnd = (self.sampler.inflight() + self.smss).max(self.min_pipe_cwnd());
            self.recovery_start = Some(now);
            self.recovery_after_rto = true;
        } else if self.recovery_start.is_none() {
            // OnEnterFastRecovery: remember cwnd for its restore; cwnd itself is left alone
            // (the response to loss is the short-term model). The model for the undo was saved
            // by this episode's first lost packet, before that loss could change it (noq
            // reports the lost packets before the congestion event).
            self.save_cwnd();
            self.save_state_upon_loss();
            self.recovery_start = Some(now);
        }
        self.publish();
    }

    /// An in-order ACK's ECN count increases: `ect` packets arrived unmarked, `ce` marked
    /// (noq's `process_ecn`, after the ACK's rate sample and loss detection, so a mark is
    /// seen one ACK later than the kernel's `rs->is_ece`).
    pub fn on_ecn_feedback(&mut self, now: Instant, ect: u64, ce: u64) {
        self.now = now;
        self.ecn_feedback_seen = true;
        self.sampler.on_ecn_counts(ect, ce);
        // tcp_bbr.c `bbr_main`: ecn_in_round |= ecn_eligible && rs->is_ece.
        if ce > 0 && self.ecn_eligible {
            self.ecn_in_round = true;
        }
    }

    /// The losses of the last episode were spurious (§5.5.11.2 HandleSpuriousLossDetection).
    pub fn on_spurious_loss(&mut self, now: Instant) {
        self.now = now;
        if self.p.spurious_loss_not_undone {
            return;
        }
        self.restore_cwnd();
        self.loss_in_round = false;
        // -06 §5.5.11.2 BBRHandleSpuriousLossDetection calls BBRResetFullBW, as Linux does on
        // every undo (tcp_bbr.c `bbr_undo_cwnd`, "spurious slow-down; reset full pipe
        // detection"; tcp_bbr2.c `bbr2_undo_cwnd`): the rounds of the spurious recovery may
        // have sent less, and must not count towards STARTUP's plateau. Kept: when undos come
        // more often than every 3 rounds STARTUP cannot end (issue 31, conform A.17), but the
        // fault there was the transport declaring every reordering lost, fixed in noq's loss
        // detection (vendor/noq-proto PATCH.md, "Reordering"), as Linux raises its reordering
        // degree and stops recovering spuriously.
        self.reset_full_bw();
        let max_f = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a.max(b));
        let max_u = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a.max(b));
        self.bw_shortterm = max_f(self.bw_shortterm, self.undo_bw_shortterm);
        self.inflight_shortterm = max_u(self.inflight_shortterm, self.undo_inflight_shortterm);
        self.inflight_longterm = max_u(self.inflight_longterm, self.undo_inflight_longterm);
        match self.undo_state.filter(|_| self.p.undo_reverts_state) {
            Some(BbrState::Startup) if self.state != BbrState::Startup => {
                self.full_bw_reached = false;
                if self.state != BbrState::ProbeRtt {
                    self.set_state(BbrState::Startup);
                }
            }
            Some(BbrState::ProbeBwUp) if self.state != BbrState::ProbeBwUp && self.state != BbrState::ProbeRtt => {
                self.start_probe_bw_refill();
            }
            _ => {}
        }
        self.undo_state = None;
        self.undo_saved = false;
        self.lost_pending.clear();
        self.publish();
    }

    /// §5.5.11.1 SaveStateUponLoss, once per loss episode. Saving again later in the episode
    /// would store what the episode's own losses made of the model — a probe's excess loss sets
    /// inflight_longterm and the undo state UP, and StartProbeBW_DOWN clears `loss_in_round`
    /// so that the next lost packet looks like a new episode — and an undo would then restore
    /// that instead of the model before the loss. (The draft's pseudocode saves on every
    /// `loss_in_round` false → true, which has exactly this problem.)
    pub(super) fn save_state_upon_loss(&mut self) {
        if self.undo_saved {
            return;
        }
        self.undo_saved = true;
        self.undo_state = None;
        self.undo_bw_shortterm = self.bw_shortterm;
        self.undo_inflight_shortterm = self.inflight_shortterm;
        self.undo_inflight_longterm = self.inflight_longterm;
    }

    pub fn on_mtu_update(&mut self, mtu: u16) {
        self.smss = u64::from(mtu.max(1200));
    }

    // ---------------------------------------------------------------- §5.2.3 update flow

    pub(super) fn update_model_and_state(&mut self, now: Instant, rs: &RateSample) {
        self.update_latest_delivery_signals(rs);
        self.update_congestion_signals(rs);
        self.update_ack_aggregation(now, rs);
        self.check_startup_loss_marking_acks(rs);
        self.check_full_bw_reached(rs);
        self.check_startup_done();
        self.check_drain_done(now);
        self.update_probe_bw_cycle_phase(now, rs);
        self.update_min_rtt(now, rs);
        self.check_probe_rtt(now, rs);
        self.advance_latest_delivery_signals(rs);
        self.bound_bw_for_model();
    }

    pub(super) fn update_control_parameters(&mut self, rs: &RateSample) {
        if !self.has_seen_rtt && !rs.rtt.is_zero() {
            self.init_pacing_rate_from_rtt(rs.rtt);
        }
        self.set_pacing_rate();
        self.set_send_quantum();
        self.set_cwnd(rs);
    }

    pub(super) fn set_state(&mut self, to: BbrState) {
        let (pacing_gain, cwnd_gain) = match to {
            BbrState::Startup => (self.p.startup_pacing_gain, self.p.startup_cwnd_gain),
            BbrState::Drain => (self.p.drain_pacing_gain, self.p.startup_cwnd_gain),
            BbrState::ProbeBwDown => (self.p.probe_bw_down_pacing_gain, self.p.cwnd_gain),
            BbrState::ProbeBwCruise | BbrState::ProbeBwRefill => (1.0, self.p.cwnd_gain),
            BbrState::ProbeBwUp => (self.p.probe_bw_up_pacing_gain, self.p.probe_bw_up_cwnd_gain),
            BbrState::ProbeRtt => (1.0, self.p.probe_rtt_cwnd_gain),
        };
        self.pacing_gain = pacing_gain;
        self.cwnd_gain = cwnd_gain;
        if to != self.state {
            let (round, full_bw_round) = (self.round_count, self.full_bw_round);
            self.telemetry.record(StateChange { at: self.now, from: self.state, to, round, full_bw_round });
            self.state = to;
        }
    }

    // ---------------------------------------------------------------- rounds, §5.5.1

    pub(super) fn update_round(&mut self, rs: &RateSample) {
        self.round_start = rs.prior_delivered >= self.next_round_delivered;
        if self.round_start {
            self.start_round();
            self.round_count += 1;
            self.rounds_since_bw_probe += 1;
            self.cwnd_limited_last_round = self.cwnd_limited_this_round;
            self.cwnd_limited_this_round = false;
        }
    }

    pub(super) fn start_round(&mut self) {
        self.next_round_delivered = self.sampler.delivered();
    }

    pub(super) fn is_cwnd_limited(&self) -> bool {
        self.cwnd_limited_this_round || self.cwnd_limited_last_round
    }
}
