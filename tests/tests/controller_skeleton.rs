//! A complete sample-controller (Foo -> Deployment) written only on generated code and
//! the runtime's workqueue: the skeleton the README shows, run against the fake
//! clientset so it stays compiling and correct.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubegen_runtime::cache::informer::ResourceEventHandlerFuncs;
use kubegen_runtime::client::{ResourceClient, WriteOptions};
use kubegen_runtime::object::{object_key, split_meta_namespace_key};
use kubegen_runtime::workqueue::RateLimitingQueue;
use kubegen_tests::golden::apis::samplecontroller::v1alpha1::{Foo, FooSpec, FooStatus};
use kubegen_tests::golden::clientset::Clientset;
use kubegen_tests::golden::informers::SharedInformerFactory;
use kubegen_tests::golden::listers::samplecontroller::v1alpha1::FooLister;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Runs the controller until `queue` shuts down.
async fn run(cs: Clientset, factory: SharedInformerFactory, queue: RateLimitingQueue<String>) {
    let foos = factory.samplecontroller().v1alpha1().foos();
    let enqueue = {
        let queue = queue.clone();
        move |obj: &Arc<Foo>| queue.add(object_key(obj.as_ref()))
    };
    let on_update = enqueue.clone();
    foos.informer()
        .add_event_handler(
            ResourceEventHandlerFuncs::<Foo>::new()
                .add_func(move |obj, _| enqueue(obj))
                .update_func(move |_, new| on_update(new)),
        )
        .expect("the informer is not stopped");
    factory.start();
    factory.wait_for_cache_sync().await;

    let lister = foos.lister();
    while let Some(key) = queue.get().await {
        match reconcile(&cs, &lister, &key).await {
            Ok(()) => queue.forget(&key),
            Err(_) => queue.add_rate_limited(key.clone()),
        }
        queue.done(&key);
    }
    factory.shutdown().await;
}

/// Makes the Foo's Deployment exist and records its replicas in the Foo's status.
async fn reconcile(cs: &Clientset, lister: &FooLister, key: &str) -> Result<(), Error> {
    let (namespace, name) = split_meta_namespace_key(key)?;
    let obj = match lister.foos(namespace).get(name) {
        Ok(obj) => obj,
        Err(e) if e.is_not_found() => return Ok(()), // deleted meanwhile
        Err(e) => return Err(e.into()),
    };
    let spec = obj.spec.clone().unwrap_or_default();
    let Some(deployment_name) = spec.deployment_name else {
        return Ok(()); // nothing to do until the user names the Deployment
    };
    let deployments = ResourceClient::<Deployment>::namespaced(cs.client().clone(), namespace);
    let deployment = match deployments.get(&deployment_name).await {
        Ok(d) => d,
        Err(e) if e.is_not_found() => {
            let d = new_deployment(&obj, &deployment_name, spec.replicas);
            deployments.create(&d, &WriteOptions::default()).await?
        }
        Err(e) => return Err(e.into()),
    };
    let replicas = deployment.spec.replicas;
    if obj.status.as_ref().and_then(|s| s.available_replicas) != replicas {
        let mut updated = Foo::clone(&obj);
        updated.status = Some(FooStatus {
            available_replicas: replicas,
        });
        cs.samplecontroller_v1alpha1()
            .foos(namespace)
            .update_status(&updated, &WriteOptions::default())
            .await?;
    }
    Ok(())
}

fn new_deployment(obj: &Foo, name: &str, replicas: Option<i32>) -> Deployment {
    let labels = std::collections::BTreeMap::from([
        ("app".to_owned(), "nginx".to_owned()),
        (
            "controller".to_owned(),
            obj.metadata.name.clone().unwrap_or_default(),
        ),
    ]);
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: obj.metadata.namespace.clone(),
            ..Default::default()
        },
        spec: DeploymentSpec {
            replicas,
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".into(),
                        image: Some("nginx:latest".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test]
async fn sample_controller_skeleton_creates_the_deployment_and_records_status() {
    let mut example = Foo::new(
        "example",
        FooSpec {
            deployment_name: Some("example-nginx".into()),
            replicas: Some(2),
        },
    );
    example.metadata.namespace = Some("default".into());
    let fake = kubegen_tests::golden::fake::new_simple_clientset([
        kubegen_runtime::testing::SeedObject::from(&example),
    ])
    .await
    .unwrap();
    let cs = fake.clientset().clone();
    let factory = SharedInformerFactory::new(cs.clone(), Duration::from_secs(30));
    let queue = RateLimitingQueue::new();
    let controller = tokio::spawn(run(cs.clone(), factory, queue.clone()));

    let foos = cs.samplecontroller_v1alpha1().foos("default");
    // Poll until the controller has written the status. cargo test has no timeout of its
    // own, so a controller that never writes it would hang CI: the deadline turns that
    // into a failure. It is generous (the machine may be loaded); speed is not asserted.
    let status = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            if let Some(status) = foos.get("example").await.unwrap().status {
                break status;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the controller wrote no status within 60 s");
    assert_eq!(status.available_replicas, Some(2));
    let deployment = ResourceClient::<Deployment>::namespaced(cs.client().clone(), "default")
        .get("example-nginx")
        .await
        .unwrap();
    assert_eq!(deployment.spec.replicas, Some(2));

    queue.shut_down_with_drain().await;
    tokio::time::timeout(Duration::from_secs(60), controller)
        .await
        .expect("the controller did not stop within 60 s of the queue's shutdown")
        .unwrap();
}
