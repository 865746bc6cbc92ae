//! Watch: event sequences (types and names) for writes, selectors, initial events and
//! bookmarks, and a too-old resourceVersion.

use std::time::Duration;

use serde_json::{json, Value};

use crate::case::{Case, Cmp};
use crate::families::{cms, configmap, pick, step, with, CaseFn};
use crate::harness::{Pair, Req, Watch, Which};

pub const CASES: &[(&str, CaseFn)] = &[
    (
        "create, update, delete from a list's resourceVersion",
        |p, ns, c| Box::pin(writes(p, ns, c)),
    ),
    ("label selector: entering and leaving", |p, ns, c| {
        Box::pin(selector(p, ns, c))
    }),
    ("field selector on the name", |p, ns, c| {
        Box::pin(field_selector(p, ns, c))
    }),
    ("no resourceVersion: current objects first", |p, ns, c| {
        Box::pin(initial(p, ns, c))
    }),
    ("sendInitialEvents with bookmarks", |p, ns, c| {
        Box::pin(send_initial(p, ns, c))
    }),
    ("resourceVersion too old", |p, ns, c| {
        Box::pin(too_old(p, ns, c))
    }),
    ("invalid watch parameters", |p, ns, c| {
        Box::pin(invalid(p, ns, c))
    }),
];

/// Each event as `TYPE name` (a bookmark as `BOOKMARK` plus its initial-events-end
/// annotation; an error as `ERROR code reason`).
fn shape(events: &[Value]) -> Value {
    json!(events
        .iter()
        .map(|e| {
            let t = e["type"].as_str().unwrap_or("?");
            let o = &e["object"];
            match t {
                "BOOKMARK" => {
                    let end = o["metadata"]["annotations"]["k8s.io/initial-events-end"].as_str();
                    format!(
                        "BOOKMARK{}",
                        end.map(|v| format!(" initial-events-end={v}"))
                            .unwrap_or_default()
                    )
                }
                "ERROR" => format!("ERROR {} {}", o["code"], o["reason"].as_str().unwrap_or("")),
                _ => format!("{t} {}", o["metadata"]["name"].as_str().unwrap_or("?")),
            }
        })
        .collect::<Vec<_>>())
}

/// Opens the watch on both sides (built per side); a refused watch is compared as an
/// answer and ends the case.
async fn open(
    p: &Pair,
    c: &mut Case,
    what: &str,
    build: impl Fn(Which) -> Req,
) -> Option<(Watch, Watch)> {
    let (rm, rr) = (build(Which::Mem), build(Which::Real));
    let (a, b) = tokio::join!(p.mem.watch(&rm), p.real.watch(&rr));
    match (a, b) {
        (Ok(a), Ok(b)) => Some((a, b)),
        (a, b) => {
            let ok = crate::harness::Resp {
                code: 200,
                body: Value::Null,
                error: None,
            };
            let (ea, eb) = (a.err().unwrap_or(ok.clone()), b.err().unwrap_or(ok));
            c.check_described(format!("{what}: {}", rm.describe()), &ea, &eb, Cmp::Outcome);
            None
        }
    }
}

/// Collects up to `n` events on both sides (or whatever came within `wait`) and compares
/// their shapes.
async fn compare(c: &mut Case, what: &str, w: &(Watch, Watch), n: usize, wait: Duration) {
    let enough = |ev: &[Value]| ev.len() >= n;
    let (a, b) = tokio::join!(w.0.until(wait, enough), w.1.until(wait, enough));
    c.check_values(format!("events of {what}"), &shape(&a), &shape(&b));
}

const WAIT: Duration = Duration::from_secs(10);

async fn writes(p: Pair, ns: String, mut c: Case) -> Case {
    let list = step(&p, &mut c, Req::get(cms(&ns)), Cmp::Body).await;
    let path = |w: Which| {
        Req::get(format!(
            "{}?watch=true&resourceVersion={}",
            cms(&ns),
            pick(w, &list).rv()
        ))
    };
    let Some(w) = open(&p, &mut c, "watch", path).await else {
        return c;
    };
    let item = format!("{}/w1", cms(&ns));
    step(
        &p,
        &mut c,
        Req::post(cms(&ns), &configmap("w1", json!({}))),
        Cmp::Outcome,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            &item,
            "application/merge-patch+json",
            r#"{"data":{"a":"1"}}"#,
        ),
        Cmp::Outcome,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::post(cms(&ns), &configmap("w2", json!({}))),
        Cmp::Outcome,
    )
    .await;
    step(&p, &mut c, Req::delete(&item), Cmp::Outcome).await;
    compare(&mut c, "create, update, create, delete", &w, 4, WAIT).await;
    // The objects in the events, normalized, must agree too.
    let (a, b) = tokio::join!(
        w.0.until(Duration::ZERO, |_| true),
        w.1.until(Duration::ZERO, |_| true)
    );
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        c.check_values(
            format!("event {i} object"),
            &crate::harness::normalize(&x["object"]),
            &crate::harness::normalize(&y["object"]),
        );
    }
    c
}

async fn selector(p: Pair, ns: String, mut c: Case) -> Case {
    let list = step(&p, &mut c, Req::get(cms(&ns)), Cmp::Outcome).await;
    let path = |w: Which| {
        Req::get(format!(
            "{}?watch=true&labelSelector=app%3Dx&resourceVersion={}",
            cms(&ns),
            pick(w, &list).rv()
        ))
    };
    let Some(w) = open(&p, &mut c, "watch", path).await else {
        return c;
    };
    let item = format!("{}/s1", cms(&ns));
    let labelled = |v: &str| {
        with(&configmap("s1", json!({})), |o| {
            o["metadata"]["labels"] = json!({"app": v})
        })
    };
    step(
        &p,
        &mut c,
        Req::post(cms(&ns), &labelled("y")),
        Cmp::Outcome,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            &item,
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"app":"x"}}}"#,
        ),
        Cmp::Outcome,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            &item,
            "application/merge-patch+json",
            r#"{"data":{"k":"v"}}"#,
        ),
        Cmp::Outcome,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::patch(
            &item,
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"app":"z"}}}"#,
        ),
        Cmp::Outcome,
    )
    .await;
    step(&p, &mut c, Req::delete(&item), Cmp::Outcome).await;
    compare(&mut c, "enter, modify, leave, delete outside", &w, 3, WAIT).await;
    c
}

async fn field_selector(p: Pair, ns: String, mut c: Case) -> Case {
    let list = step(&p, &mut c, Req::get(cms(&ns)), Cmp::Outcome).await;
    let path = |w: Which| {
        Req::get(format!(
            "{}?watch=true&fieldSelector=metadata.name%3Dpicked&resourceVersion={}",
            cms(&ns),
            pick(w, &list).rv()
        ))
    };
    let Some(w) = open(&p, &mut c, "watch", path).await else {
        return c;
    };
    for name in ["other", "picked"] {
        step(
            &p,
            &mut c,
            Req::post(cms(&ns), &configmap(name, json!({}))),
            Cmp::Outcome,
        )
        .await;
    }
    step(
        &p,
        &mut c,
        Req::delete(format!("{}/picked", cms(&ns))),
        Cmp::Outcome,
    )
    .await;
    compare(
        &mut c,
        "two creates, one selected, and its delete",
        &w,
        2,
        WAIT,
    )
    .await;
    step(
        &p,
        &mut c,
        Req::get(format!(
            "{}?watch=true&fieldSelector=data.x%3D1&timeoutSeconds=2",
            cms(&ns)
        )),
        Cmp::Outcome,
    )
    .await;
    c
}

async fn initial(p: Pair, ns: String, mut c: Case) -> Case {
    for name in ["i1", "i2"] {
        step(
            &p,
            &mut c,
            Req::post(cms(&ns), &configmap(name, json!({}))),
            Cmp::Outcome,
        )
        .await;
    }
    let Some(w) = open(&p, &mut c, "watch", |_| {
        Req::get(format!("{}?watch=true", cms(&ns)))
    })
    .await
    else {
        return c;
    };
    step(
        &p,
        &mut c,
        Req::post(cms(&ns), &configmap("i3", json!({}))),
        Cmp::Outcome,
    )
    .await;
    compare(&mut c, "two existing, one new", &w, 3, WAIT).await;
    let Some(w) = open(&p, &mut c, "watch rv=0", |_| {
        Req::get(format!("{}?watch=true&resourceVersion=0", cms(&ns)))
    })
    .await
    else {
        return c;
    };
    compare(&mut c, "rv=0: three existing", &w, 3, WAIT).await;
    c
}

async fn send_initial(p: Pair, ns: String, mut c: Case) -> Case {
    for name in ["b1", "b2"] {
        step(
            &p,
            &mut c,
            Req::post(cms(&ns), &configmap(name, json!({}))),
            Cmp::Outcome,
        )
        .await;
    }
    let q = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let Some(w) = open(&p, &mut c, "watch", |_| {
        Req::get(format!("{}?{q}", cms(&ns)))
    })
    .await
    else {
        return c;
    };
    compare(&mut c, "initial events and the end bookmark", &w, 3, WAIT).await;
    drop(w);
    // sendInitialEvents needs resourceVersionMatch=NotOlderThan and bookmarks.
    for bad in [
        "watch=true&sendInitialEvents=true",
        "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
        "watch=true&sendInitialEvents=true&resourceVersionMatch=Exact&allowWatchBookmarks=true",
        "sendInitialEvents=true",
    ] {
        let req = Req::get(format!("{}?{bad}&timeoutSeconds=1", cms(&ns)));
        step(&p, &mut c, req, Cmp::Outcome).await;
    }
    c
}

async fn too_old(p: Pair, ns: String, mut c: Case) -> Case {
    // Writes enough that the oldest revisions fall out of the watch window on a server
    // that compacts; an RV of 1 predates everything on both.
    let Some(w) = open(&p, &mut c, "watch rv=1", |_| {
        Req::get(format!("{}?watch=true&resourceVersion=1", cms(&ns)))
    })
    .await
    else {
        return c;
    };
    compare(
        &mut c,
        "a watch from resourceVersion 1",
        &w,
        1,
        Duration::from_secs(3),
    )
    .await;
    let list = Req::get(format!(
        "{}?resourceVersion=1&resourceVersionMatch=Exact",
        cms(&ns)
    ));
    step(&p, &mut c, list, Cmp::Outcome).await;
    let future = Req::get(format!(
        "{}?resourceVersion=999999999&resourceVersionMatch=NotOlderThan&timeoutSeconds=1",
        cms(&ns)
    ));
    step(&p, &mut c, future, Cmp::Outcome).await;
    c
}

async fn invalid(p: Pair, ns: String, mut c: Case) -> Case {
    for q in [
        "watch=true&resourceVersion=abc",
        "watch=true&labelSelector=%21%21",
        "watch=true&resourceVersionMatch=Exact&resourceVersion=1",
        "watch=true&resourceVersionMatch=Bogus",
    ] {
        let req = Req::get(format!("{}?{q}&timeoutSeconds=2", cms(&ns)));
        step(&p, &mut c, req, Cmp::Outcome).await;
    }
    c
}
