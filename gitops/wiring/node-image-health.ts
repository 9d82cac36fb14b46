// Health of the node images a ClusterClass needs, for Flux's `wait: true`: ORC (openstack
// resource controller, `openstack.k-orc.cloud/v1alpha1`) `Image`, the node image the openstack/scs
// cluster-class chart renders. kstatus alone would call an Image Current as soon as it exists; a
// cluster created from a class whose image is still uploading cannot boot. ORC reports `Available`
// True once the image can be used, and `Progressing` False with `Available` not True when it gave
// up (a terminal error a person must look at). Argo CD gets the same rules from
// gitops/health/openstack.k-orc.cloud_Image.lua (generated from orc-image-health-script.ts).
export const ORC_IMAGE_API_VERSION = 'openstack.k-orc.cloud/v1alpha1';
export const ORC_IMAGE_KIND = 'Image';

const conditions = 'status.?conditions.orValue([])';
const available = `${conditions}.exists(c, c.type == 'Available' && c.status == 'True')`;

/** Flux `healthCheckExprs` entries for node image kinds (Flux 2.5+). */
export const NODE_IMAGE_HEALTH = [
  {
    apiVersion: ORC_IMAGE_API_VERSION,
    kind: ORC_IMAGE_KIND,
    current: available,
    failed: `!(${available}) && ${conditions}.exists(c, c.type == 'Progressing' && c.status == 'False')`,
  },
];
