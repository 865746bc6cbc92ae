//! +groupName=example.com
//! +k8s:deepcopy-gen=package

/// +genclient
/// +genclient:nonNamespaced
/// +genclient:method=Scale,verb=update,subresource=scale,input=Scale,result=Scale
/// +genclient:skipVerbs=deleteCollection
/// +resourceName=thingies
pub struct Thing {
    pub metadata: ObjectMeta,
    #[serde(flatten)]
    pub spec: Option<Box<Vec<ThingSpec>>>,
    #[serde(rename = "r#type", skip)]
    pub r#type: std::collections::BTreeMap<String, (u8, [i32; 3])>,
}

/// +k8s:deepcopy-gen=false
pub enum ThingSpec { A, B(u8), C { x: i64 } }

/// +genclient:readonly
/// +genclient:noStatus
/// +genclient:onlyVerbs=get,list
pub struct Other<T> { pub metadata: ObjectMeta, pub t: T }
