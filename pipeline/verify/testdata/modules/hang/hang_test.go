package hang

import "testing"

func TestQuick(t *testing.T) {}

func TestHangs(t *testing.T) {
	t.Run("inner", func(t *testing.T) {
		block := make(chan struct{})
		<-block
	})
}
