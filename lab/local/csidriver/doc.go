// Package csidriver is the local lab's CSI driver: two CSI drivers in one
// program, each its own driver name because attachRequired is a field of
// the CSIDriver object and so holds for every volume of a name.
//
//   - directory.csi.faultline.local (attachRequired: false): a volume is
//     one directory under the storage host's export path; every node
//     reaches it, and NodePublishVolume bind-mounts it into the pod's
//     target path. On the local lab every host shares the machine's one
//     file system, so the directory stands in for an NFS export with a
//     working lock manager (file locks are the kernel's, taken by every
//     node alike): emulated.
//   - block.csi.faultline.local (attachRequired: true): a volume is one
//     image file holding ext4, made at CreateVolume (optionally with
//     ext4 multi-mount protection). ControllerPublishVolume records which
//     node attached it; NodeStageVolume makes that node's own loop device
//     over the image and mounts ext4 from it, so two nodes have two
//     page caches over one image, as two hosts over one shared disk
//     would; NodeUnstageVolume unmounts it and detaches the loop device.
//
// The export path is laid out by Store. The program that runs both
// drivers is cmd/faultline-csi; its README says how a lab runs it.
package csidriver
