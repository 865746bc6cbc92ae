//! InformerFactory behaviour (SEMANTICS 5): fake sources for informers made with
//! `informer_for`, and a kube client on a recording tower service where the URLs and
//! query parameters of real list and watch requests matter. Paused clock throughout.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::cache::reflector::ListerWatcher;
use crate::cache::test_support::{pod, settle, wait_until, FakeSource};

/// A kube client whose requests are answered from memory (empty lists; watches that end
/// at once) and whose request URIs are recorded.
fn recording_client() -> (kube::Client, Arc<Mutex<Vec<http::Uri>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = Arc::clone(&log);
    let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let uri = req.uri().clone();
        l.lock().unwrap().push(uri.clone());
        async move {
            let watch = uri.query().is_some_and(|q| q.contains("watch=true"));
            let body = if watch {
                String::new()
            } else {
                r#"{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":"7"},"items":[]}"#
                    .to_owned()
            };
            Ok::<_, std::convert::Infallible>(http::Response::new(http_body_util::Full::new(
                bytes::Bytes::from(body),
            )))
        }
    });
    (kube::Client::new(service, "default"), log)
}

fn from_source<K: Object + kube::Resource<DynamicType = ()>>(
    factory: &InformerFactory,
    source: &Arc<FakeSource<K>>,
) -> SharedIndexInformer<K> {
    factory.informer_for::<K>(|config| {
        SharedIndexInformer::new(Arc::clone(source) as Arc<dyn ListerWatcher<K>>, config)
    })
}

fn same<K: Object>(a: &SharedIndexInformer<K>, b: &SharedIndexInformer<K>) -> bool {
    std::ptr::eq(a.indexer(), b.indexer())
}

fn node(name: &str) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            resource_version: Some("1".into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test]
async fn one_informer_per_type() {
    // SEMANTICS 5.1
    let (client, _) = recording_client();
    let factory = InformerFactory::new(client, FactoryOptions::new(Duration::from_secs(600)));
    let typed = factory.informer::<Pod>();
    let again = factory.informer_for::<Pod>(|_| panic!("the second constructor must not run"));
    assert!(same(&typed, &again));
    assert!(same(&typed, &factory.informer::<Pod>()));
}

#[tokio::test]
async fn per_type_resync_overrides_the_default() {
    // SEMANTICS 5.2
    let (client, _) = recording_client();
    let factory = InformerFactory::new(
        client,
        FactoryOptions::new(Duration::from_secs(600)).custom_resync::<Pod>(Duration::from_secs(60)),
    );
    assert_eq!(
        factory.informer::<Pod>().resync_check_period(),
        Duration::from_secs(60)
    );
    assert_eq!(
        factory.informer::<Deployment>().resync_check_period(),
        Duration::from_secs(600)
    );
}

async fn first_list_and_watch(options: FactoryOptions) -> (http::Uri, http::Uri) {
    let (client, log) = recording_client();
    let factory = InformerFactory::new(client, options);
    factory.informer::<Pod>();
    let stop = CancellationToken::new();
    factory.start(&stop);
    // The WatchList client's streaming watch comes first; this server closes it at once,
    // so the reflector falls back to LIST + WATCH.
    let is_watch = |u: &http::Uri| u.query().is_some_and(|q| q.contains("watch=true"));
    let first = |watch: bool| {
        log.lock()
            .unwrap()
            .iter()
            .find(|u| is_watch(u) == watch)
            .cloned()
    };
    wait_until("a list and a watch", || {
        first(false).is_some() && first(true).is_some()
    })
    .await;
    factory.shutdown().await;
    (first(false).unwrap(), first(true).unwrap())
}

#[tokio::test(start_paused = true)]
async fn namespace_applies_to_list_and_watch_urls() {
    // SEMANTICS 5.3
    let (list, watch) =
        first_list_and_watch(FactoryOptions::new(Duration::ZERO).namespace("ns1")).await;
    assert_eq!(list.path(), "/api/v1/namespaces/ns1/pods");
    assert!(!list.query().unwrap_or("").contains("watch=true"), "{list}");
    assert_eq!(watch.path(), "/api/v1/namespaces/ns1/pods");
    assert!(
        watch.query().unwrap_or("").contains("watch=true"),
        "{watch}"
    );

    // The default is all namespaces.
    let (list, watch) = first_list_and_watch(FactoryOptions::new(Duration::ZERO)).await;
    assert_eq!(list.path(), "/api/v1/pods");
    assert_eq!(watch.path(), "/api/v1/pods");
}

#[tokio::test(start_paused = true)]
async fn tweak_applies_to_list_and_watch_queries() {
    // SEMANTICS 5.4
    let (list, watch) = first_list_and_watch(
        FactoryOptions::new(Duration::ZERO)
            .tweak_list_options(|o| o.label_selector = Some("app=x".into())),
    )
    .await;
    for uri in [list, watch] {
        let query = uri.query().unwrap_or("");
        assert!(
            query.split('&').any(|kv| kv == "labelSelector=app%3Dx"),
            "{uri}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn start_twice_runs_each_informer_once() {
    // SEMANTICS 5.5
    let factory = InformerFactory::without_client(FactoryOptions::default());
    let source = FakeSource::new(vec![pod("pod1", "1")]);
    let informer = from_source(&factory, &source);
    let stop = CancellationToken::new();
    factory.start(&stop);
    factory.start(&stop);
    settle("synced", || {
        informer.has_synced() && source.open_watches() > 0
    })
    .await;
    factory.start(&stop);
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(source.list_calls().len(), 1);
    assert_eq!(source.watch_calls().len(), 1);
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn informers_requested_after_start_need_another_start() {
    // SEMANTICS 5.6
    let factory = InformerFactory::without_client(FactoryOptions::default());
    let pods = FakeSource::new(vec![pod("pod1", "1")]);
    from_source(&factory, &pods);
    let stop = CancellationToken::new();
    factory.start(&stop);
    let nodes = FakeSource::new(vec![node("n1")]);
    let node_informer = from_source(&factory, &nodes);

    let synced = factory.wait_for_cache_sync(&stop).await;
    assert_eq!(
        synced,
        BTreeMap::from([(std::any::type_name::<Pod>(), true)])
    );
    assert!(nodes.list_calls().is_empty());
    assert!(!node_informer.is_started());

    factory.start(&stop);
    let synced = factory.wait_for_cache_sync(&stop).await;
    assert_eq!(
        synced,
        BTreeMap::from([
            (std::any::type_name::<Node>(), true),
            (std::any::type_name::<Pod>(), true)
        ])
    );
    assert_eq!(nodes.list_calls().len(), 1);
    assert_eq!(node_informer.indexer().list_keys(), ["n1"]);
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn wait_for_cache_sync_reports_false_when_stopped_first() {
    // SEMANTICS 5.7
    let factory = InformerFactory::without_client(FactoryOptions::default());
    let pods = FakeSource::new(vec![pod("pod1", "1")]);
    pods.fail_lists(Some("Access Denied"));
    from_source(&factory, &pods);
    let stop = CancellationToken::new();
    factory.start(&stop);
    stop.cancel();
    let synced = factory.wait_for_cache_sync(&stop).await;
    assert_eq!(
        synced,
        BTreeMap::from([(std::any::type_name::<Pod>(), false)])
    );
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_waits_for_informers_and_stops_later_starts() {
    // SEMANTICS 5.8
    let factory = InformerFactory::without_client(FactoryOptions::default());
    let pods = FakeSource::new(vec![pod("pod1", "1")]);
    let informer = from_source(&factory, &pods);
    let stop = CancellationToken::new();
    factory.start(&stop);
    settle("synced", || informer.has_synced()).await;

    // Concurrent shutdowns: each returns only once the informer has stopped.
    let (a, b) = tokio::join!(
        async {
            factory.shutdown().await;
            informer.is_stopped()
        },
        async {
            factory.shutdown().await;
            informer.is_stopped()
        }
    );
    assert!(a && b);
    assert!(
        !stop.is_cancelled(),
        "the caller's token is not the factory's to cancel"
    );

    // Nothing starts after shutdown.
    let nodes = FakeSource::new(vec![node("n1")]);
    let node_informer = from_source(&factory, &nodes);
    factory.start(&stop);
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert!(!node_informer.is_started());
    assert!(nodes.list_calls().is_empty());
    assert!(!factory
        .wait_for_cache_sync(&stop)
        .await
        .contains_key(std::any::type_name::<Node>()));
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn caller_stop_token_ends_informers_cleanly() {
    // SEMANTICS 5.8
    let factory = InformerFactory::without_client(FactoryOptions::default());
    let pods = FakeSource::new(vec![pod("pod1", "1")]);
    let informer = from_source(&factory, &pods);
    let stop = CancellationToken::new();
    factory.start(&stop);
    settle("synced", || informer.has_synced()).await;
    stop.cancel();
    // The informer's run ends as it does on its own stop: marked stopped, handlers
    // refused, its handler threads told to end.
    settle("informer stopped", || informer.is_stopped()).await;
    assert!(informer
        .add_event_handler(crate::cache::informer::ResourceEventHandlerFuncs::new())
        .is_err());
    factory.shutdown().await;
}

#[tokio::test]
async fn for_resource_finds_the_typed_informer() {
    // SEMANTICS 5.9
    let (client, _) = recording_client();
    let factory = InformerFactory::new(client, FactoryOptions::default());
    let pods = factory.informer::<Pod>();
    let generic = factory
        .for_resource(&GroupVersionResource::gvr("", "v1", "pods"))
        .unwrap();
    assert!(same(&generic.informer::<Pod>().unwrap(), &pods));
    assert!(generic.informer::<Node>().is_none());
    assert!(!generic.has_synced());
    let err = generic.lister().get("ns", "missing").unwrap_err();
    assert_eq!(err.message(), r#"pods "missing" not found"#);

    let deployments = factory.informer::<Deployment>();
    let generic = factory
        .for_resource(&GroupVersionResource::gvr("apps", "v1", "deployments"))
        .unwrap();
    assert!(same(
        &generic.informer::<Deployment>().unwrap(),
        &deployments
    ));

    let err = factory
        .for_resource(&GroupVersionResource::gvr("x", "v1", "nope"))
        .unwrap_err();
    assert!(err.to_string().contains("no informer found for"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn transform_applies_to_every_informer() {
    // SEMANTICS 5.10
    let factory = InformerFactory::without_client(FactoryOptions::default().transform(
        |obj: Arc<dyn Any + Send + Sync>| {
            let obj = match obj.downcast::<Pod>() {
                Ok(mut p) => {
                    Arc::make_mut(&mut p).metadata.labels =
                        Some([("seen".to_owned(), "pod".to_owned())].into());
                    return Ok(p);
                }
                Err(other) => other,
            };
            match obj.downcast::<ConfigMap>() {
                Ok(mut c) => {
                    Arc::make_mut(&mut c).metadata.labels =
                        Some([("seen".to_owned(), "cm".to_owned())].into());
                    Ok(c)
                }
                Err(other) => Ok(other),
            }
        },
    ));
    let pods = FakeSource::new(vec![pod("pod1", "1")]);
    let config_maps = FakeSource::new(vec![ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("ns".into()),
            name: Some("cm1".into()),
            resource_version: Some("1".into()),
            ..Default::default()
        },
        ..Default::default()
    }]);
    let pod_informer = from_source(&factory, &pods);
    let cm_informer = from_source(&factory, &config_maps);
    let stop = CancellationToken::new();
    factory.start(&stop);
    let synced = factory.wait_for_cache_sync(&stop).await;
    assert!(synced.values().all(|s| *s) && synced.len() == 2);
    let label =
        |l: &Option<BTreeMap<String, String>>| l.as_ref().and_then(|l| l.get("seen")).cloned();
    let p = pod_informer.indexer().get_by_key("ns/pod1").unwrap();
    assert_eq!(label(&p.metadata.labels).as_deref(), Some("pod"));
    let c = cm_informer.indexer().get_by_key("ns/cm1").unwrap();
    assert_eq!(label(&c.metadata.labels).as_deref(), Some("cm"));
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn factory_transform_composes_with_the_informers_own_and_keeps_its_type() {
    // SEMANTICS 5.10: the factory's transform reaches the informer through its
    // configuration (nothing to refuse, no error dropped) and runs before a transform the
    // constructor set, which it no longer replaces.
    let factory = InformerFactory::without_client(FactoryOptions::default().transform(
        |obj: Arc<dyn Any + Send + Sync>| match obj.downcast::<Pod>() {
            Ok(mut p) => {
                Arc::make_mut(&mut p).metadata.labels =
                    Some([("factory".to_owned(), "yes".to_owned())].into());
                Ok(p)
            }
            Err(other) => Ok(other),
        },
    ));
    let pods = FakeSource::new(vec![pod("pod1", "1")]);
    let informer = factory.informer_for::<Pod>(|config| {
        let informer =
            SharedIndexInformer::new(Arc::clone(&pods) as Arc<dyn ListerWatcher<Pod>>, config);
        informer
            .set_transform(|mut p: Arc<Pod>| {
                let seen_factory = p
                    .metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key("factory"));
                Arc::make_mut(&mut p).metadata.annotations =
                    Some([("own".to_owned(), seen_factory.to_string())].into());
                Ok(p)
            })
            .unwrap();
        informer
    });
    let stop = CancellationToken::new();
    factory.start(&stop);
    assert!(factory
        .wait_for_cache_sync(&stop)
        .await
        .values()
        .all(|s| *s));
    let p = informer.indexer().get_by_key("ns/pod1").unwrap();
    assert_eq!(p.metadata.labels.as_ref().unwrap()["factory"], "yes");
    assert_eq!(p.metadata.annotations.as_ref().unwrap()["own"], "true");
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_transform_returning_another_type_keeps_the_object_out_of_the_cache() {
    let factory = InformerFactory::without_client(
        FactoryOptions::default()
            .transform(|_obj| Ok(Arc::new(ConfigMap::default()) as Arc<dyn Any + Send + Sync>)),
    );
    let pods = FakeSource::new(vec![pod("pod1", "1")]);
    let informer = from_source(&factory, &pods);
    let stop = CancellationToken::new();
    factory.start(&stop);
    wait_until("listed", || !pods.list_calls().is_empty()).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(informer.indexer().is_empty());
    assert!(!informer.has_synced(), "the rejected list is not a sync");
    factory.shutdown().await;
}
