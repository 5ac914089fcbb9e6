package api

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"

	"github.com/flotilla-gitops/flotilla/inventory"
)

// An inventory lists every registered cluster with its kubeconfig path or agent settings, its labels and its
// template values: about 270 bytes a cluster, so 2.7 MB at 10,000 clusters, over Temporal's 2 MB payload
// limit for the inventory workflow's continue-as-new input and for its query answer. Compressed it is about
// 10 bytes a cluster (names and paths repeat), so the limit moves past a hundred thousand clusters. A small
// inventory stays plain in the workflow's input, so its history reads as it did in the Web UI.

// QueryInventoryPacked answers the inventory gzip-compressed (PackedInventory); QueryInventory answers it
// plain, which past a few thousand clusters does not fit in an answer.
const QueryInventoryPacked = "inventoryPacked"

// PackedInventory is an inventory as gzip-compressed JSON.
type PackedInventory struct {
	Z []byte `json:"z"`
}

// PackInventoryAbove is the size of an inventory past which the inventory workflow continues as new with it
// packed (InventoryInput.InventoryZ).
const PackInventoryAbove = 256 << 10

// MaxUnpackedInventory bounds a packed inventory once decompressed (10,000 clusters are about 3 MB): gzip
// turns a few hundred KB of zeros into gigabytes.
const MaxUnpackedInventory = 64 << 20

// PackInventory compresses an inventory.
func PackInventory(inv inventory.Inventory) (PackedInventory, error) {
	raw, err := json.Marshal(inv)
	if err != nil {
		return PackedInventory{}, fmt.Errorf("inventory: %w", err)
	}
	z, err := gzipBytes(raw)
	return PackedInventory{Z: z}, err
}

// Unpack decompresses the inventory.
func (p PackedInventory) Unpack() (inventory.Inventory, error) {
	var inv inventory.Inventory
	if err := gunzipJSON(p.Z, MaxUnpackedInventory, &inv); err != nil {
		return inv, fmt.Errorf("packed inventory: %w", err)
	}
	return inv, nil
}

// NewInventoryInput carries inv plain, or packed when its JSON is larger than packAbove bytes.
func NewInventoryInput(inv inventory.Inventory, packAbove int) (InventoryInput, error) {
	raw, err := json.Marshal(inv)
	if err != nil {
		return InventoryInput{}, fmt.Errorf("inventory: %w", err)
	}
	if len(raw) <= packAbove {
		return InventoryInput{Inventory: &inv}, nil
	}
	z, err := gzipBytes(raw)
	return InventoryInput{InventoryZ: z}, err
}

// Unpack returns the inventory the input carries, plain or packed; nil when it carries none.
func (in InventoryInput) Unpack() (*inventory.Inventory, error) {
	if len(in.InventoryZ) == 0 {
		return in.Inventory, nil
	}
	inv, err := PackedInventory{Z: in.InventoryZ}.Unpack()
	if err != nil {
		return nil, err
	}
	return &inv, nil
}

func gzipBytes(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(raw); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gunzipJSON decodes gzip-compressed JSON into v, refusing more than limit bytes once decompressed.
func gunzipJSON(z []byte, limit int, v any) error {
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return err
	}
	if len(raw) > limit {
		return fmt.Errorf("larger than %d MiB once decompressed", limit>>20)
	}
	return json.Unmarshal(raw, v)
}
