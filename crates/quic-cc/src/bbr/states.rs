//! The state machine: Startup and Drain (§5.3.1–5.3.2), ProbeBW (§5.3.3), ProbeRTT
//! (§5.3.4) and the restart from idle (§5.4.1).

use super::*;

impl Bbr {
    // ---------------------------------------------------------------- Startup and Drain

    /// §5.3.1.2 BBRCheckFullBWReached: bandwidth grew less than 25 % for 3 rounds (v2: the
    /// max_bw estimate, v3: the latest delivery rate; see [`BbrParams::full_bw_on_max_bw`]).
    pub(super) fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_now || !self.round_start || (rs.is_app_limited && !self.p.full_bw_counts_app_limited) {
            return;
        }
        let bw = if self.p.full_bw_on_max_bw { self.max_bw } else { rs.delivery_rate };
        if bw >= self.full_bw * self.p.full_bw_growth {
            self.reset_full_bw();
            self.full_bw = bw;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= self.p.full_bw_rounds;
        if self.full_bw_now {
            self.full_bw_reached = true;
        }
    }

    pub(super) fn reset_full_bw(&mut self) {
        self.full_bw = 0.0;
        self.full_bw_count = 0;
        self.full_bw_round = self.round_count;
        self.full_bw_now = false;
    }

    /// §5.3.1.1 BBRCheckStartupDone.
    pub(super) fn check_startup_done(&mut self) {
        if self.state == BbrState::Startup && self.full_bw_reached {
            self.ssthresh = Some(self.bdp_multiple(self.max_bw, 1.0));
            if self.p.tcp_bbr2_bookkeeping {
                // Startup's losses were the probe's, not a reason to cut the short-term model
                // in Drain (tcp_bbr2.c `bbr_check_drain`).
                self.reset_congestion_signals();
            } else {
                // Nor its marks (tcp_bbr.c v3 `bbr_check_drain` resets them too; -06 has no
                // ECN signals to reset).
                self.reset_ecn_signals();
            }
            self.drain_start_round = self.round_count;
            self.set_state(BbrState::Drain);
        }
    }

    /// §5.3.2 BBRCheckDrainDone: the Startup queue is gone once inflight ≤ BDP (+ budget).
    pub(super) fn check_drain_done(&mut self, now: Instant) {
        let too_long = self.p.drain_max_rounds.is_some_and(|r| self.round_count > self.drain_start_round + r);
        if self.state == BbrState::Drain && (self.sampler.inflight() <= self.inflight_for(1.0) || too_long) {
            self.enter_probe_bw(now);
        }
    }

    // ---------------------------------------------------------------- ProbeBW, §5.3.3

    pub(super) fn enter_probe_bw(&mut self, now: Instant) {
        self.cycle_stamp = now;
        self.start_probe_bw_down();
    }

    pub(super) fn start_probe_bw_down(&mut self) {
        self.reset_congestion_signals();
        self.probe_up_cnt = u64::MAX;
        self.pick_probe_wait();
        self.cycle_stamp = self.now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round();
        self.set_state(BbrState::ProbeBwDown);
    }

    pub(super) fn start_probe_bw_cruise(&mut self) {
        if self.p.tcp_bbr2_bookkeeping {
            // tcp_bbr2.c `bbr2_start_bw_probe_cruise`.
            if let (Some(lo), Some(hi)) = (self.inflight_shortterm, self.inflight_longterm) {
                self.inflight_shortterm = Some(lo.min(hi));
            }
        }
        self.set_state(BbrState::ProbeBwCruise);
    }

    pub(super) fn start_probe_bw_refill(&mut self) {
        self.start_probe_bw_refill_with(0);
    }

    /// `bbr_start_bw_probe_refill(sk, bw_probe_up_rounds)`: UP's first round grows
    /// inflight_hi by 2^`up_rounds` packets (0 but after marks, see `ecn_reprobe_due`).
    pub(super) fn start_probe_bw_refill_with(&mut self, up_rounds: u32) {
        self.reset_short_term_model();
        self.bw_probe_up_rounds = up_rounds;
        self.bw_probe_up_acks = 0;
        self.prev_probe_precautionary = false;
        self.ack_phase = AckPhase::Refilling;
        self.start_round();
        self.set_state(BbrState::ProbeBwRefill);
    }

    pub(super) fn start_probe_bw_up(&mut self, rs: &RateSample) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round();
        self.reset_full_bw();
        self.full_bw = rs.delivery_rate;
        self.cycle_stamp = self.now;
        self.set_state(BbrState::ProbeBwUp);
        self.raise_inflight_longterm_slope();
    }

    /// Randomised wait before the next probe, 2–3 s, so flows desynchronise (§5.3.3.8.2).
    pub(super) fn pick_probe_wait(&mut self) {
        self.rounds_since_bw_probe = self.next_random() % 2;
        let fraction = (self.next_random() >> 11) as f64 / (1u64 << 53) as f64;
        self.bw_probe_wait = Duration::from_secs(2) + Duration::from_secs_f64(fraction);
    }

    pub(super) fn next_random(&mut self) -> u64 {
        // xorshift64*: deterministic, so runs on a virtual clock repeat exactly.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// §5.3.3.9 UpdateProbeBWCyclePhase.
    pub(super) fn update_probe_bw_cycle_phase(&mut self, now: Instant, rs: &RateSample) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_long_term_model(rs) {
            return;
        }
        let state = self.state;
        match state {
            BbrState::ProbeBwDown => {
                if self.is_time_to_probe_bw(now) {
                    return;
                }
                if self.is_time_to_cruise() {
                    self.start_probe_bw_cruise();
                }
            }
            BbrState::ProbeBwCruise => {
                self.is_time_to_probe_bw(now);
            }
            // After one round of refilling the pipe at gain 1, start probing.
            BbrState::ProbeBwRefill if self.round_start => {
                self.bw_probe_samples = true;
                self.start_probe_bw_up(rs);
            }
            BbrState::ProbeBwUp if self.is_time_to_go_down(now, rs) => {
                self.prev_probe_too_high = false; // no excess loss (yet)
                self.start_probe_bw_down();
            }
            _ => {}
        }
    }

    /// §5.3.3.9 AdaptLongTermModel: learn inflight_longterm from the probe's feedback.
    /// Returns whether it decided a state transition. (Excess loss is handled per lost packet,
    /// in `on_packet_lost`.)
    pub(super) fn adapt_long_term_model(&mut self, rs: &RateSample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // The probe's samples are all in: forget the previous cycle's max.
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.state.is_probe_bw() && (!rs.is_app_limited || self.p.max_bw_counts_app_limited) {
                self.cycle_count += 1;
            }
            // Precautionary probing, acceleration: the cautious probe saw no excess loss, so
            // probe again at once, this time holding inflight_longterm for a round.
            if self.p.precautionary_probing && self.state.is_probe_bw() && self.prev_probe_precautionary && !self.prev_probe_too_high {
                self.start_probe_bw_refill();
                return true;
            }
        }
        let loss_too_high = self.is_inflight_too_high(rs.lost, rs.tx_in_flight);
        let ecn_too_high = self.is_ecn_too_high(rs);
        if loss_too_high || ecn_too_high {
            // Excess marking can only be judged here, per ACK (tcp_bbr.c
            // `bbr_adapt_upper_bounds`); excess loss in v3 per lost packet (-06).
            if self.bw_probe_samples && (ecn_too_high || self.p.ack_path_loss_check) {
                self.handle_inflight_too_high(rs.tx_in_flight, rs.is_app_limited);
            }
            return false;
        }
        let Some(longterm) = self.inflight_longterm else {
            return false;
        };
        if rs.tx_in_flight > longterm {
            self.inflight_longterm = Some(rs.tx_in_flight);
        }
        if self.state == BbrState::ProbeBwUp {
            self.probe_inflight_longterm_upward(rs);
        }
        false
    }

    /// Grow inflight_longterm while UP finds no excess loss: slowly, then exponentially.
    pub(super) fn probe_inflight_longterm_upward(&mut self, rs: &RateSample) {
        let Some(longterm) = self.inflight_longterm else {
            return;
        };
        if (!self.is_cwnd_limited() || self.cwnd < longterm) && !self.p.inflight_longterm_grows_app_limited {
            if self.p.tcp_bbr2_bookkeeping {
                // No credit for ACKs while not using inflight_hi (bbr2_probe_inflight_hi_upward).
                self.bw_probe_up_acks = 0;
            }
            return;
        }
        self.bw_probe_up_acks += rs.newly_acked;
        if self.bw_probe_up_acks >= self.probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.probe_up_cnt;
            self.inflight_longterm = Some(longterm + delta * self.smss);
        }
        if self.round_start {
            self.raise_inflight_longterm_slope();
        }
    }

    /// Each round of UP doubles the growth: +1, 2, 4, … SMSS per cwnd of data acked.
    pub(super) fn raise_inflight_longterm_slope(&mut self) {
        let growth_this_round = 1u64 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.probe_up_cnt = (self.cwnd / growth_this_round).max(self.smss);
    }

    pub(super) fn has_elapsed_in_phase(&self, now: Instant, interval: Duration) -> bool {
        now > self.cycle_stamp + interval
    }

    /// §5.3.3.8.2 IsTimeToProbeBW (after tcp_bbr.c's ECN reprobe, `ecn_reprobe_due`): after
    /// the random wait, or after as many rounds as Reno
    /// would need to refill the BDP (capped at 63), whichever is first.
    pub(super) fn is_time_to_probe_bw(&mut self, now: Instant) -> bool {
        if self.ecn_reprobe_due() {
            let rounds = self.ecn_reprobe_rounds();
            self.start_probe_bw_refill_with(rounds);
            return true;
        }
        let reno_rounds = (self.target_inflight() / self.smss).min(63);
        if self.has_elapsed_in_phase(now, self.bw_probe_wait) || self.rounds_since_bw_probe >= reno_rounds {
            self.start_probe_bw_refill();
            return true;
        }
        false
    }

    /// §5.3.3.9 IsTimeToCruise: DOWN has drained the probe's queue.
    pub(super) fn is_time_to_cruise(&self) -> bool {
        let inflight = self.sampler.inflight();
        if self.inflight_with_headroom().is_some_and(|cap| inflight > cap) {
            return false;
        }
        inflight <= self.inflight_for(1.0)
    }

    /// When ProbeBW_UP has found what it can (see [`UpExit`]).
    pub(super) fn is_time_to_go_down(&mut self, now: Instant, rs: &RateSample) -> bool {
        // Inflight is judged, as Linux does, before this ACK (it freed room that is only
        // refilled after it).
        let prior_inflight = self.sampler.inflight() + rs.newly_acked;
        // "inflight ≥ inflight_longterm" at byte granularity: no room left for another packet.
        let at_longterm = self.inflight_longterm.is_some_and(|l| prior_inflight + self.smss > l);
        if self.p.precautionary_probing && self.prev_probe_too_high && at_longterm {
            // Precautionary probing, deceleration: the last probe hit excess loss here.
            self.prev_probe_precautionary = true;
            return true;
        }
        match self.p.up_exit {
            UpExit::BwPlateau => {
                if self.is_cwnd_limited() && self.inflight_longterm.is_some_and(|l| self.cwnd >= l) {
                    // Limited by inflight_longterm, not by the path: keep probing.
                    self.reset_full_bw();
                    self.full_bw = rs.delivery_rate;
                    false
                } else {
                    self.full_bw_now
                }
            }
            UpExit::InflightAboveTarget => {
                let min_rtt = self.min_rtt.unwrap_or(Duration::ZERO);
                self.has_elapsed_in_phase(now, min_rtt) && prior_inflight >= self.inflight_for(self.p.probe_bw_up_pacing_gain)
            }
        }
    }

    // ---------------------------------------------------------------- ProbeRTT, §5.3.4

    /// §5.3.4.3 BBRUpdateMinRTT.
    pub(super) fn update_min_rtt(&mut self, now: Instant, rs: &RateSample) {
        self.probe_rtt_expired = now > self.probe_rtt_min_stamp + self.p.probe_rtt_interval;
        let rtt = rs.rtt;
        if !rtt.is_zero() && (self.probe_rtt_min_delay.is_none_or(|d| rtt < d) || self.probe_rtt_expired) {
            self.probe_rtt_min_delay = Some(rtt);
            self.probe_rtt_min_stamp = now;
        }
        let min_rtt_expired = now > self.min_rtt_stamp + self.p.min_rtt_filter_len;
        if let Some(delay) = self.probe_rtt_min_delay {
            if self.min_rtt.is_none_or(|m| delay < m) || min_rtt_expired {
                self.min_rtt = Some(delay);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
    }

    /// §5.3.4.3 BBRCheckProbeRTT.
    pub(super) fn check_probe_rtt(&mut self, now: Instant, rs: &RateSample) {
        let idle_restart = self.idle_restart && !self.p.probe_rtt_ignores_idle_restart;
        if self.state != BbrState::ProbeRtt && self.probe_rtt_expired && !idle_restart && !self.p.probe_rtt_expires_unentered {
            self.set_state(BbrState::ProbeRtt);
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round();
        }
        if self.state == BbrState::ProbeRtt {
            self.handle_probe_rtt(now);
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// Hold inflight at the ProbeRTT cwnd for 200 ms and one round, then leave.
    pub(super) fn handle_probe_rtt(&mut self, now: Instant) {
        // The deliberately low inflight must not be taken for the path's bandwidth.
        self.sampler.mark_app_limited();
        if self.probe_rtt_done_stamp.is_none() && self.sampler.inflight() <= self.probe_rtt_cwnd() {
            self.probe_rtt_done_stamp = Some(now + self.p.probe_rtt_duration);
            self.probe_rtt_round_done = false;
            self.start_round();
        } else if self.probe_rtt_done_stamp.is_some() {
            if self.round_start {
                self.probe_rtt_round_done = true;
            }
            if self.probe_rtt_round_done {
                self.check_probe_rtt_done(now);
            }
        }
    }

    pub(super) fn check_probe_rtt_done(&mut self, now: Instant) {
        if self.probe_rtt_done_stamp.is_some_and(|done| now > done) {
            // The RTT was just measured with an empty queue: the next ProbeRTT is 5 s away.
            self.probe_rtt_min_stamp = now;
            self.restore_cwnd();
            self.exit_probe_rtt();
        }
    }

    pub(super) fn exit_probe_rtt(&mut self) {
        self.reset_short_term_model();
        if self.full_bw_reached {
            self.start_probe_bw_down();
            self.start_probe_bw_cruise();
        } else {
            self.set_state(BbrState::Startup);
        }
    }

    pub(super) fn probe_rtt_cwnd(&self) -> u64 {
        self.bdp_multiple(self.bw, self.p.probe_rtt_cwnd_gain).max(self.min_pipe_cwnd())
    }

    /// §5.4.1 BBRHandleRestartFromIdle.
    pub(super) fn handle_restart_from_idle(&mut self, now: Instant) {
        if self.sampler.inflight() == 0 && self.sampler.is_app_limited() {
            self.idle_restart = true;
            self.extra_acked_interval_start = Some(now);
            if self.p.idle_restart_enters_startup && self.full_bw_reached && self.state != BbrState::Startup {
                self.reset_full_bw();
                self.full_bw_reached = false;
                self.set_state(BbrState::Startup);
                return;
            }
            if self.state.is_probe_bw() {
                self.set_pacing_rate_with_gain(1.0);
            } else if self.state == BbrState::ProbeRtt {
                self.check_probe_rtt_done(now);
            }
        }
    }
}
