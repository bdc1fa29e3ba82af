module github.com/scalegate/scalegate

go 1.26
