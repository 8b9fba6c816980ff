//! Starting the forwarder threads all or nothing: if one cannot be spawned, the ones already
//! running are stopped and joined, so no thread keeps the TUN devices open forever.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

pub(crate) type Job<T> = Box<dyn FnOnce() -> T + Send + 'static>;

/// Spawns a named OS thread.
pub(crate) fn os_thread<T: Send + 'static>(name: String, job: Job<T>) -> io::Result<JoinHandle<T>> {
    std::thread::Builder::new().name(name).spawn(job)
}

/// Spawns every job with `spawn`; on the first failure sets `stop`, joins the threads
/// already started and returns the error. Jobs must return once `stop` is set.
pub(crate) fn spawn_all<T>(
    jobs: Vec<(String, Job<T>)>,
    stop: &AtomicBool,
    mut spawn: impl FnMut(String, Job<T>) -> io::Result<JoinHandle<T>>,
) -> io::Result<Vec<JoinHandle<T>>> {
    let mut started = Vec::with_capacity(jobs.len());
    for (name, job) in jobs {
        match spawn(name, job) {
            Ok(handle) => started.push(handle),
            Err(e) => {
                stop.store(true, Ordering::SeqCst);
                for handle in started {
                    let _ = handle.join();
                }
                return Err(e);
            }
        }
    }
    Ok(started)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_failed_second_spawn_stops_and_joins_the_first() {
        let stop = Arc::new(AtomicBool::new(false));
        let finished = Arc::new(AtomicUsize::new(0));
        let job = |stop: Arc<AtomicBool>, finished: Arc<AtomicUsize>| -> Job<()> {
            Box::new(move || {
                // A forwarder: runs until told to stop.
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                finished.fetch_add(1, Ordering::SeqCst);
            })
        };
        let jobs = vec![("first".to_string(), job(stop.clone(), finished.clone())), ("second".to_string(), job(stop.clone(), finished.clone()))];
        let mut calls = 0;
        let result = spawn_all(jobs, &stop, |name, j| {
            calls += 1;
            if calls == 2 {
                return Err(io::Error::new(io::ErrorKind::OutOfMemory, "no thread for you"));
            }
            os_thread(name, j)
        });
        assert_eq!(result.unwrap_err().kind(), io::ErrorKind::OutOfMemory);
        assert!(stop.load(Ordering::SeqCst), "the stop flag is raised");
        // spawn_all returned only after joining: the first job has already finished.
        assert_eq!(finished.load(Ordering::SeqCst), 1, "the first forwarder was stopped and joined");
    }

    #[test]
    fn all_spawned_when_nothing_fails() {
        let stop = AtomicBool::new(false);
        let jobs: Vec<(String, Job<u32>)> = vec![("a".into(), Box::new(|| 1)), ("b".into(), Box::new(|| 2))];
        let handles = spawn_all(jobs, &stop, os_thread).unwrap();
        let got: Vec<u32> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(got, vec![1, 2]);
        assert!(!stop.load(Ordering::SeqCst));
    }
}
