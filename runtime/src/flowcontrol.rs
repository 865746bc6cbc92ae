//! The token bucket behind client-side rate limiting (client-go's `util/flowcontrol`
//! token bucket over `golang.org/x/time/rate`).
//!
//! Contract:
//! - A [`TokenBucket`] starts full with `burst` tokens and refills at `qps` tokens per
//!   second, never above `burst` (SEMANTICS 12, client-side rate limiting).
//! - [`TokenBucket::try_accept`] takes a token only if one is there now;
//!   [`TokenBucket::reserve`] always takes one, going into debt, and returns how long
//!   until that token is due, so callers are served in the order they reserved;
//!   [`TokenBucket::accept`] reserves and sleeps until then.
//! - A `burst` of 0 never grants a token (`reserve` returns `Duration::MAX`); an infinite
//!   `qps` never waits.
//!
//! Time is `tokio::time`: under a paused clock the bucket refills only as the clock
//! advances. The bucket is shared by reference (`Arc`); it locks inside and never blocks
//! a thread.

use std::fmt;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// A token bucket of `burst` tokens refilled at `qps` per second.
///
/// ```
/// use kubegen_runtime::flowcontrol::TokenBucket;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let bucket = TokenBucket::new(1.0, 2);
/// assert!(bucket.try_accept());
/// assert!(bucket.try_accept());
/// assert!(!bucket.try_accept());
/// tokio::time::sleep(std::time::Duration::from_secs(1)).await;
/// assert!(bucket.try_accept());
/// # }
/// ```
pub struct TokenBucket {
    qps: f64,
    burst: u32,
    state: Mutex<State>,
}

struct State {
    tokens: f64,
    /// When `tokens` was last brought up to date; `None` before the first use (the
    /// bucket starts full).
    last: Option<Instant>,
}

impl fmt::Debug for TokenBucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenBucket")
            .field("qps", &self.qps)
            .field("burst", &self.burst)
            .finish_non_exhaustive()
    }
}

impl TokenBucket {
    /// A full bucket of `burst` tokens, refilled at `qps` tokens per second.
    pub fn new(qps: f64, burst: u32) -> Self {
        TokenBucket {
            qps,
            burst,
            state: Mutex::new(State {
                tokens: f64::from(burst),
                last: None,
            }),
        }
    }

    /// Tokens added per second.
    pub fn qps(&self) -> f64 {
        self.qps
    }

    /// The most tokens the bucket holds.
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// The tokens there would be now, and the instant of "now".
    fn refill(&self, state: &State) -> (f64, Instant) {
        let now = Instant::now();
        let refill = match state.last {
            Some(last) if self.qps > 0.0 => {
                now.saturating_duration_since(last).as_secs_f64() * self.qps
            }
            _ => 0.0,
        };
        ((state.tokens + refill).min(f64::from(self.burst)), now)
    }

    /// Takes a token if one is available now (`TryAccept`).
    pub fn try_accept(&self) -> bool {
        if self.qps.is_infinite() && self.qps > 0.0 {
            return true;
        }
        let mut state = self.state.lock();
        let (tokens, now) = self.refill(&state);
        if tokens < 1.0 {
            return false;
        }
        state.tokens = tokens - 1.0;
        state.last = Some(now);
        true
    }

    /// Takes one token, going into debt when none is left; returns how long until it is
    /// due (`Reserve().Delay()`).
    pub fn reserve(&self) -> Duration {
        if self.qps.is_infinite() && self.qps > 0.0 {
            return Duration::ZERO;
        }
        if self.burst == 0 {
            return Duration::MAX;
        }
        let mut state = self.state.lock();
        let (tokens, now) = self.refill(&state);
        let tokens = tokens - 1.0;
        state.tokens = tokens;
        state.last = Some(now);
        if tokens >= 0.0 {
            Duration::ZERO
        } else if self.qps > 0.0 {
            Duration::try_from_secs_f64(-tokens / self.qps).unwrap_or(Duration::MAX)
        } else {
            Duration::MAX
        }
    }

    /// Takes one token and waits until it is due (`Accept`/`Wait`); returns how long it
    /// waited.
    pub async fn accept(&self) -> Duration {
        let wait = self.reserve();
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // SEMANTICS 12.1
    #[tokio::test(start_paused = true)]
    async fn try_accept_takes_burst_tokens_then_refills() {
        let bucket = TokenBucket::new(1.0, 3);
        assert!(bucket.try_accept());
        assert!(bucket.try_accept());
        assert!(bucket.try_accept());
        assert!(!bucket.try_accept());

        let bucket = TokenBucket::new(1.0, 1);
        assert!(bucket.try_accept());
        assert!(!bucket.try_accept());
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(bucket.try_accept());
        assert!(!bucket.try_accept(), "refill is capped at burst");
    }

    // SEMANTICS 12.2
    #[tokio::test(start_paused = true)]
    async fn accept_waits_for_the_next_token_in_reservation_order() {
        let bucket = TokenBucket::new(10.0, 5);
        let start = Instant::now();
        for _ in 0..16 {
            bucket.accept().await;
        }
        assert!(
            start.elapsed() >= Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );

        let bucket = TokenBucket::new(5.0, 10);
        let waits: Vec<Duration> = (0..12).map(|_| bucket.reserve()).collect();
        assert!(waits[..10].iter().all(|w| w.is_zero()), "{waits:?}");
        let near =
            |d: Duration, ms: u64| d.abs_diff(Duration::from_millis(ms)) < Duration::from_micros(1);
        assert!(near(waits[10], 200), "{waits:?}");
        assert!(near(waits[11], 400), "{waits:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn zero_burst_never_grants_and_infinite_qps_never_waits() {
        let none = TokenBucket::new(10.0, 0);
        assert!(!none.try_accept());
        assert_eq!(none.reserve(), Duration::MAX);
        let all = TokenBucket::new(f64::INFINITY, 0);
        assert!(all.try_accept());
        assert_eq!(all.reserve(), Duration::ZERO);
    }
}
