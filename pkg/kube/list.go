package kube

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ListAll lists every object of list's kind in pages of pageSize, so that no single response
// holds thousands of objects, and returns the items of all pages.
func ListAll(ctx context.Context, reader client.Reader, list client.ObjectList, pageSize int64, opts ...client.ListOption) ([]client.Object, error) {
	var all []client.Object
	continueToken := ""
	for {
		page := list.DeepCopyObject().(client.ObjectList)
		pageOpts := append(append([]client.ListOption{}, opts...), client.Limit(pageSize), client.Continue(continueToken))
		if err := reader.List(ctx, page, pageOpts...); err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(page)
		if err != nil {
			return nil, fmt.Errorf("reading list items: %w", err)
		}
		for _, item := range items {
			all = append(all, item.(client.Object))
		}
		if continueToken = page.GetContinue(); continueToken == "" {
			return all, nil
		}
	}
}
