//! A process-wide pool of decoding threads.
//!
//! Contract: [`run`] executes a closure on one of a fixed set of long-lived threads
//! (as many as the machine has cores, at most 8, started on first use) and returns its
//! result; a panicking closure yields `Err` and its thread lives on. When no thread
//! could be started, the closure runs inline.
//!
//! Why a pool of its own rather than tokio's blocking pool: objects decoded here live in
//! caches and are later freed when replaced. The system allocator keeps memory per
//! thread-arena, so decoding every object on the same few threads lets the memory of
//! replaced objects be reused by their replacements, where short-lived or changing
//! threads would leave it stranded (a cache twice its size after one round of updates).
//!
//! Time spent here is invisible to tokio's paused test clock: callers use it only for
//! large inputs.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send>;

struct Pool {
    jobs: Option<Mutex<mpsc::Sender<Job>>>,
}

static POOL: OnceLock<Pool> = OnceLock::new();

fn pool() -> &'static Pool {
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(2, |p| p.get().min(8));
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let mut started = 0;
        for i in 0..threads {
            let rx = Arc::clone(&rx);
            let spawned = std::thread::Builder::new()
                .name(format!("kubegen-decode-{i}"))
                .spawn(move || loop {
                    let job = match rx.lock() {
                        Ok(guard) => guard.recv(),
                        Err(_) => return,
                    };
                    match job {
                        Ok(job) => {
                            let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
                        }
                        Err(_) => return,
                    }
                });
            if spawned.is_ok() {
                started += 1;
            }
        }
        Pool {
            jobs: (started > 0).then(|| Mutex::new(tx)),
        }
    })
}

/// How many threads decode in parallel.
pub(crate) fn width() -> usize {
    std::thread::available_parallelism().map_or(2, |p| p.get().min(8))
}

/// Runs `f` on a decoding thread and returns its result (`Err` if it panicked).
pub(crate) async fn run<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let Some(jobs) = &pool().jobs else {
        return Ok(f());
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(f());
    });
    let sent = match jobs.lock() {
        Ok(sender) => sender.send(job).map_err(|e| e.0),
        Err(_) => Err(job),
    };
    if let Err(job) = sent {
        // The pool is unusable: run the job here.
        job();
    }
    rx.await
        .map_err(|_| "a decoding thread panicked".to_owned())
}
